// pi-ask-relay.ts: a Pi extension that relays the pi-agent-ask event channels of `pi.events`
// to local clients over a private Unix domain socket (JSON lines, wire protocol version 1).
//
// Load it with:  pi -e "$(pi-ask relay-path)"
// See README.md next to this file for the wire protocol and the trust model.
//
// Design rules: never TCP; never crash or block Pi (every socket callback is guarded; output is
// written as each client reads it, and only a client that stops reading is dropped); one socket per
// Pi process: <dir>/pi-<pid>.sock; listen on session_start, announce session_end and close on
// session_shutdown (Pi calls the factory again for every new session). Headless, it is the host's
// external-UI provider while a client that answers forms (said so in its hello) is connected; an
// answerer that answers pings and goes silent (a stopped process) no longer counts.
// Only type imports from Pi: loading the relay loads none of Pi's modules itself.

import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";

const PROTOCOL = 1;
const MAX_LINE_BYTES = 1024 * 1024;
/** Forms kept for replay, and their total size: the oldest are forgotten beyond either. */
const MAX_REPLAY_FORMS = 256;
const MAX_REPLAY_BYTES = 64 * 1024 * 1024;
/** Submits whose submit-result is still to be routed to the client that emitted them. */
const MAX_OUTSTANDING_SUBMITS = 4096;
/** Longest Unix socket path (sun_path holds 108 bytes with the terminating NUL). */
const MAX_SOCKET_PATH_BYTES = 107;

const CH_STARTED = "pi-agent-ask:started";
const CH_COMPLETED = "pi-agent-ask:completed";
const CH_SUBMIT = "pi-agent-ask:submit";
const CH_SUBMIT_RESULT = "pi-agent-ask:submit-result";
const CH_EXTERNAL_UI = "pi-agent-ask:external-ui";
const RELAYED_CHANNELS = [CH_STARTED, CH_COMPLETED, CH_SUBMIT_RESULT] as const;
/** Relay-private: a form the host disposed without a completed (its call ended at the grace
 * period: the real extension disposes the flow when the provider's open rejects), so that
 * clients stop showing it open. (An abort emits completed; a session end, session_end.) */
const CH_FLOW_ENDED = "pi-ask-relay:flow-ended";
/** The keys of a submit-result that are protocol; the host may add others (the real one adds its
 * internal form state as `state`), which never cross the socket. */
const SUBMIT_RESULT_KEYS = new Set(["version", "requestId", "flowId", "ok", "error", "message"]);

/** The version of the client hello this relay understands (announced as `clientHello`). */
const CLIENT_HELLO = 1;
type Role = "answerer" | "observer";
/** Our id as the host's external-UI provider: the same in every Pi and every session. */
const PROVIDER_ID = "pi-ask-sdk.relay";

/** The longest delay a Node timer takes (about 24.8 days): a longer one fires at once. */
const LONGEST_TIMER_MS = 2_147_483_647;
/** What was wrong with the variables, said once on stderr when the extension loads. */
const ENV_PROBLEMS: string[] = [];

/** A millisecond variable of Pi's environment: unset or blank, the default; a number >= 0,
 * rounded up to a whole millisecond (the hello carries integers) and at most LONGEST_TIMER_MS;
 * anything else (not a number, negative) the default, and said so. */
function envMs(name: string, fallback: number): number {
	const value = process.env[name];
	if (value === undefined || value.trim() === "") return fallback;
	const n = Number(value);
	if (Number.isNaN(n) || n < 0) {
		ENV_PROBLEMS.push(`${name}=${JSON.stringify(value)} is not a number of milliseconds >= 0: using the default, ${fallback}`);
		return fallback;
	}
	return Math.min(Math.ceil(n), LONGEST_TIMER_MS);
}

/** How long a provided form waits for an answering client after the last one left
 * ($PI_ASK_RELAY_GRACE_MS, default 5 s; 0: fail at once). */
const GRACE_MS = envMs("PI_ASK_RELAY_GRACE_MS", 5_000);

/** The version of the liveness ping this relay sends (announced as `ping` in its hello). */
const PING = 1;
/** How often an answerer that answers pings (`"pong": 1` in its hello) is pinged
 * ($PI_ASK_RELAY_PING_MS, default 5 s; 0: never, and no answerer is ever taken for gone). */
const PING_MS = pingMs(envMs("PI_ASK_RELAY_PING_MS", 5_000));
/** How long such an answerer may send nothing before it counts as gone; checked at each ping, so
 * it is dropped between this and this plus one interval after it last sent anything
 * ($PI_ASK_RELAY_PING_TIMEOUT_MS, default 15 s, at least two intervals). */
const PING_TIMEOUT_MS = pingTimeoutMs(envMs("PI_ASK_RELAY_PING_TIMEOUT_MS", 15_000), PING_MS);
const PING_LINE = Buffer.from('{"type":"ping"}\n', "utf8");
/** Milliseconds on a clock that never jumps (silence is measured on it, not on the wall clock). */
const monotonic = (): number => performance.now();

function pingMs(ms: number): number {
	return ms === 0 ? 0 : Math.max(10, ms);
}

function pingTimeoutMs(ms: number, interval: number): number {
	// Below two intervals a live client could be judged between its pong and the next ping.
	return Math.max(ms > 0 ? ms : 15_000, 2 * interval);
}

const SESSION_END_REASONS = new Set(["quit", "reload", "new", "resume", "fork"]);
const SOCKET_NAME_RE = /^pi-(\d+)\.sock$/;
/** The name a relay binds before it listens (renamed to pi-<pid>.sock once it accepts): hidden,
 * not a socket name clients look for, and no longer than the socket's name. */
const BOUND_NAME_RE = /^\.pi-(\d+)\.new$/;
function boundName(pid: number): string {
	return `.pi-${pid}.new`;
}

type ErrorCode = "bad_json" | "line_too_long" | "unknown_type" | "forbidden_channel" | "bad_message";

/** A submit-result without the keys that are not protocol (the same object when it has none). */
function protocolOnly(data: unknown): unknown {
	if (typeof data !== "object" || data === null || Array.isArray(data)) return data;
	const keys = Object.keys(data);
	if (keys.every((key) => SUBMIT_RESULT_KEYS.has(key))) return data;
	const source = data as Record<string, unknown>;
	const copy: Record<string, unknown> = {};
	for (const key of keys) if (SUBMIT_RESULT_KEYS.has(key)) copy[key] = source[key];
	return copy;
}

// Process-wide registry: a relay left listening by an earlier session of this process (or a second
// copy of this extension) is closed before a new one listens on the same per-pid path.
interface RelayRegistry {
	current?: Relay;
	loggedErrors: Set<string>;
}
const REGISTRY_KEY = Symbol.for("pi-ask-sdk.relay.registry");
function registry(): RelayRegistry {
	const g = globalThis as unknown as Record<symbol, RelayRegistry | undefined>;
	let r = g[REGISTRY_KEY];
	if (!r) {
		r = { loggedErrors: new Set() };
		g[REGISTRY_KEY] = r;
	}
	return r;
}

function logErrorOnce(key: string, message: string): void {
	const r = registry();
	if (r.loggedErrors.has(key)) return;
	r.loggedErrors.add(key);
	try {
		console.error(`[pi-ask-relay] ${message}`);
	} catch {
		// nothing else to do
	}
}

let cachedPiVersion: string | undefined;
/** Pi's version from the package.json of the running Pi CLI (walks up from process.argv[1]). */
function piVersion(): string {
	if (cachedPiVersion !== undefined) return cachedPiVersion;
	cachedPiVersion = "unknown";
	try {
		const entry = process.argv[1];
		if (entry) {
			let dir = path.dirname(fs.realpathSync(entry));
			for (let i = 0; i < 8; i++) {
				const candidate = path.join(dir, "package.json");
				if (fs.existsSync(candidate)) {
					const pkg = JSON.parse(fs.readFileSync(candidate, "utf8")) as { name?: unknown; version?: unknown };
					if (typeof pkg.name === "string" && pkg.name.endsWith("/pi-coding-agent") && typeof pkg.version === "string") {
						cachedPiVersion = pkg.version;
						break;
					}
				}
				const parent = path.dirname(dir);
				if (parent === dir) break;
				dir = parent;
			}
		}
	} catch {
		// keep "unknown"
	}
	return cachedPiVersion;
}

/** The socket directory: $PI_ASK_RELAY_DIR, else $XDG_RUNTIME_DIR/pi-ask, else <tmpdir>/pi-ask-<uid>. */
export function relayDir(env: NodeJS.ProcessEnv = process.env): string {
	const explicit = env.PI_ASK_RELAY_DIR;
	if (explicit) return path.resolve(explicit);
	const xdg = env.XDG_RUNTIME_DIR;
	if (xdg) return path.join(xdg, "pi-ask");
	const uid = typeof process.getuid === "function" ? process.getuid() : 0;
	return path.join(os.tmpdir(), `pi-ask-${uid}`);
}

/** Creates the directory (0700) if needed; returns an error text if it must not be used. */
function prepareDir(dir: string): string | undefined {
	try {
		fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
	} catch (e) {
		return `cannot create socket directory ${dir}: ${(e as Error).message}`;
	}
	let st: fs.Stats;
	try {
		st = fs.lstatSync(dir);
	} catch (e) {
		return `cannot stat socket directory ${dir}: ${(e as Error).message}`;
	}
	if (!st.isDirectory()) return `socket directory ${dir} is not a directory (symlinks are refused)`;
	const uid = typeof process.getuid === "function" ? process.getuid() : st.uid;
	const privateDir = "point PI_ASK_RELAY_DIR at a private directory of your own instead (mkdir -m 700 DIR), the same for Pi and its clients";
	if (st.uid !== uid) return `socket directory ${dir} is owned by uid ${st.uid}, not by this process (uid ${uid}); ${privateDir}`;
	if ((st.mode & 0o077) !== 0) {
		const mode = (st.mode & 0o7777).toString(8);
		// A shared directory (/tmp: sticky, anyone may write) must not be made private.
		if ((st.mode & 0o1002) !== 0) return `socket directory ${dir} has mode ${mode}: it is a shared directory; ${privateDir}`;
		return `socket directory ${dir} has mode ${mode}; it must not grant any group/other permission (chmod 700)`;
	}
	return undefined;
}

/** Unlinks sockets of dead Pi processes (and our own pid's leftover), and the names they bound
 * before listening. Never touches live ones. */
function removeStaleSockets(dir: string): void {
	let names: string[];
	try {
		names = fs.readdirSync(dir);
	} catch {
		return;
	}
	for (const name of names) {
		const m = SOCKET_NAME_RE.exec(name) ?? BOUND_NAME_RE.exec(name);
		if (!m) continue;
		const pid = Number(m[1]);
		let stale = pid === process.pid;
		if (!stale) {
			try {
				process.kill(pid, 0);
			} catch (e) {
				stale = (e as NodeJS.ErrnoException).code === "ESRCH";
			}
		}
		if (!stale) continue;
		try {
			const full = path.join(dir, name);
			if (fs.lstatSync(full).isSocket()) fs.unlinkSync(full);
		} catch {
			// raced with someone else: fine
		}
	}
}

const EMPTY = Buffer.alloc(0);

/** One line as it goes on the wire: UTF-8, newline-terminated. */
function encodeLine(line: string): Buffer {
	return Buffer.from(`${line}\n`, "utf8");
}

/** Output a client has not read yet. Above this, a client that makes no progress is dropped. */
const STALL_BYTES = 8 * 1024 * 1024;
/** How long a client over STALL_BYTES may go without reading anything before it is dropped
 * ($PI_ASK_RELAY_STALL_MS, default 10 s; a slow link such as an SSH forward may want more). */
const STALL_MS = Math.max(100, envMs("PI_ASK_RELAY_STALL_MS", 10_000));
/** Unsent output no client may exceed, reading or not (Pi's memory comes first). */
const MAX_QUEUED_BYTES = 256 * 1024 * 1024;
/** Bytes handed to the socket at once: a reader's progress shows after each chunk it takes. */
const CHUNK_BYTES = 64 * 1024;
/** What the socket may hold beyond what is queued here before the next chunk waits. */
const SOCKET_HIGH_WATER = 1024 * 1024;

class Client {
	readonly socket: net.Socket;
	private readonly relay: Relay;
	private chunks: Buffer[] = [];
	private pending = 0; // bytes in chunks
	private discarding = false;
	closed = false;
	/** What the client said it does in its hello; a client that says nothing only observes. */
	role: Role = "observer";
	/** Its hello said it answers pings (`"pong": 1`): only such an answerer can be taken for gone
	 * (an older client would not answer, and is kept as before). */
	answersPings = false;
	/** Its last sign of life (monotonic): anything arriving from it, or a backlog of ours that it
	 * has read. */
	private lastHeard = monotonic();
	/** end() was called: no more lines, FIN once the queue is written. */
	private ending = false;
	// Outgoing lines not yet handed to the socket (backpressure: written chunk by chunk as the
	// client reads, never all at once).
	// Each line is encoded (with its newline) once, when queued: a broadcast shares one Buffer.
	private queue: Buffer[] = [];
	private queueHead = 0;
	private current: Buffer | undefined; // the line being written, and how far
	private currentOffset = 0;
	private queuedBytes = 0;
	private inFlight = 0; // chunks handed to the socket whose write callback has not run
	private lastProgress = monotonic();
	/** More than SOCKET_HIGH_WATER was unsent: once it has all gone, the client has been reading
	 * (no socket buffer holds that much), which is a sign of life as good as a pong. */
	private backlogged = false;
	private stallTimer: NodeJS.Timeout | undefined;

	constructor(relay: Relay, socket: net.Socket) {
		this.relay = relay;
		this.socket = socket;
		socket.on("data", (chunk: Buffer) => this.guard(() => this.onData(chunk)));
		socket.on("error", () => this.guard(() => this.close()));
		socket.on("close", () => this.guard(() => this.close()));
		socket.on("end", () => this.guard(() => socket.end()));
	}

	private guard(fn: () => void): void {
		try {
			fn();
		} catch (e) {
			logErrorOnce("client-handler", `client handler failed (client dropped): ${(e as Error)?.stack ?? String(e)}`);
			this.close();
		}
	}

	/** Unsent output: queued here plus what the socket still holds. */
	private unsent(): number {
		return this.queuedBytes + this.socket.writableLength;
	}

	/** Queues one pre-serialized line: a string without its newline, or the Buffer of
	 * encodeLine(); it is written as the client reads. */
	writeLine(line: string | Buffer): void {
		if (this.closed || this.ending || this.socket.destroyed) return;
		if (this.unsent() === 0) this.lastProgress = monotonic(); // an idle client is not stalled
		const bytes = typeof line === "string" ? encodeLine(line) : line;
		this.queue.push(bytes);
		this.queuedBytes += bytes.length;
		if (this.queuedBytes > SOCKET_HIGH_WATER) this.backlogged = true;
		if (this.unsent() > MAX_QUEUED_BYTES) {
			logErrorOnce("huge-client", `dropping a client whose unsent output exceeds ${MAX_QUEUED_BYTES} bytes`);
			this.close();
			return;
		}
		this.pump();
	}

	send(message: Record<string, unknown>): void {
		this.writeLine(JSON.stringify(message));
	}

	sendError(code: ErrorCode, message: string): void {
		this.send({ type: "error", code, message });
	}

	/** Hands queued output to the socket, a chunk at a time, while the socket has room. */
	private pump(): void {
		while (!this.socket.destroyed && this.socket.writableLength < SOCKET_HIGH_WATER) {
			if (this.current === undefined) {
				if (this.queueHead >= this.queue.length) break;
				const line = this.queue[this.queueHead];
				this.queue[this.queueHead] = EMPTY;
				this.queueHead += 1;
				if (this.queueHead > 1024 && this.queueHead * 2 > this.queue.length) {
					this.queue = this.queue.slice(this.queueHead);
					this.queueHead = 0;
				}
				this.current = line;
				this.currentOffset = 0;
			}
			const end = Math.min(this.current.length, this.currentOffset + CHUNK_BYTES);
			const piece = this.current.subarray(this.currentOffset, end);
			this.currentOffset = end;
			if (end >= this.current.length) this.current = undefined;
			this.queuedBytes -= piece.length;
			this.inFlight += 1;
			this.socket.write(piece, (err) => this.guard(() => this.written(err)));
		}
		if (this.queuedBytes <= 0 && this.current === undefined && this.queueHead >= this.queue.length) {
			this.queue = [];
			this.queueHead = 0;
			this.queuedBytes = 0;
			if (this.ending && this.inFlight === 0) this.socket.end();
		}
		this.watchStall();
	}

	/** A chunk reached the kernel: the client is reading. */
	private written(err: Error | null | undefined): void {
		this.inFlight -= 1;
		if (err) {
			this.close();
			return;
		}
		this.lastProgress = monotonic();
		this.pump();
		if (this.backlogged && this.unsent() === 0) {
			this.backlogged = false;
			this.lastHeard = Math.max(this.lastHeard, this.lastProgress);
		}
	}

	/** Drops the client once it has held more than STALL_BYTES without reading for STALL_MS. */
	private watchStall(): void {
		const over = this.unsent() > STALL_BYTES;
		if (!over) {
			if (this.stallTimer !== undefined) {
				clearInterval(this.stallTimer);
				this.stallTimer = undefined;
			}
			return;
		}
		if (this.stallTimer !== undefined) return;
		const timer = setInterval(
			() =>
				this.guard(() => {
					if (this.closed && !this.ending) {
						clearInterval(timer);
						return;
					}
					if (this.unsent() > STALL_BYTES && monotonic() - this.lastProgress >= STALL_MS) {
						logErrorOnce(
							"slow-client",
							`dropping a client that read nothing for ${STALL_MS} ms with ${this.unsent()} bytes unsent`,
						);
						clearInterval(timer);
						this.stallTimer = undefined;
						this.destroy();
					}
				}),
			Math.max(100, Math.floor(STALL_MS / 10)),
		);
		timer.unref();
		this.stallTimer = timer;
	}

	close(): void {
		if (this.stallTimer !== undefined) {
			clearInterval(this.stallTimer);
			this.stallTimer = undefined;
		}
		if (this.closed && !this.ending) return;
		this.destroy();
	}

	private destroy(): void {
		this.closed = true;
		this.ending = false;
		this.chunks = [];
		this.queue = [];
		this.queueHead = 0;
		this.current = undefined;
		this.queuedBytes = 0;
		if (this.stallTimer !== undefined) {
			clearInterval(this.stallTimer);
			this.stallTimer = undefined;
		}
		this.relay.forget(this);
		this.socket.destroy();
	}

	/** At each ping tick, for an answerer that answers pings: drops it (it loses its answerer
	 * status now, and the grace rule applies) once it has shown no sign of life for PING_TIMEOUT_MS
	 * (sent nothing, and drained no backlog of ours), unless it is still reading a backlog (its
	 * pong waits behind it); else pings it. */
	checkAlive(now: number, deaf: number): void {
		if (this.closed) return;
		// `deaf`: how long the relay itself did not run since the last tick (Pi stopped, its loop
		// blocked); nothing could be heard then, so it is nobody's silence.
		this.lastHeard = Math.min(now, this.lastHeard + deaf);
		const reading = this.unsent() > 0 && now - this.lastProgress < PING_TIMEOUT_MS + deaf;
		if (now - this.lastHeard < PING_TIMEOUT_MS || reading) {
			this.writeLine(PING_LINE);
			return;
		}
		const silent = Math.round(now - this.lastHeard);
		logErrorOnce("unresponsive", `dropped an answering client that answered no ping for ${silent} ms (a stopped or blocked process?)`);
		// Said last, after everything queued: a process that resumes reads why, then EOF.
		this.send({ type: "goodbye", reason: "unresponsive", message: `answered no ping for ${silent} ms (limit ${PING_TIMEOUT_MS} ms)` });
		this.end();
	}

	/** Graceful close: write what is queued, then FIN (a stalled client is still dropped). */
	end(): void {
		if (this.closed) return;
		this.closed = true;
		this.ending = true;
		this.relay.forget(this);
		this.pump();
		// do not wait forever for a peer that never reads
		setTimeout(() => this.guard(() => this.socket.destroy()), STALL_MS).unref();
	}

	private onData(chunk: Buffer): void {
		if (this.closed) return;
		this.lastHeard = monotonic();
		let start = 0;
		while (start < chunk.length && !this.closed) {
			const nl = chunk.indexOf(0x0a, start);
			const end = nl < 0 ? chunk.length : nl;
			const piece = chunk.subarray(start, end);
			if (this.discarding) {
				if (nl >= 0) this.discarding = false;
			} else if (this.pending + piece.length > MAX_LINE_BYTES) {
				this.chunks = [];
				this.pending = 0;
				this.sendError("line_too_long", `line longer than ${MAX_LINE_BYTES} bytes; discarded up to the next newline`);
				if (nl < 0) this.discarding = true;
			} else if (nl < 0) {
				this.chunks.push(Buffer.from(piece));
				this.pending += piece.length;
			} else {
				const line = this.pending === 0 ? piece : Buffer.concat([...this.chunks, piece]);
				this.chunks = [];
				this.pending = 0;
				this.onLine(line);
			}
			if (nl < 0) break;
			start = nl + 1;
		}
	}

	private onLine(raw: Buffer): void {
		const text = raw.toString("utf8");
		if (text.trim() === "") return; // blank lines are ignored
		let message: unknown;
		try {
			message = JSON.parse(text);
		} catch (e) {
			this.sendError("bad_json", `line is not valid JSON: ${(e as Error).message}`);
			return;
		}
		if (typeof message !== "object" || message === null || Array.isArray(message)) {
			this.sendError("bad_message", "a message must be a JSON object");
			return;
		}
		const m = message as Record<string, unknown>;
		if (typeof m.type !== "string") {
			this.sendError("bad_message", 'a message needs a string "type"');
			return;
		}
		if (m.type === "hello") {
			this.onHello(m);
			return;
		}
		if (m.type === "pong") return; // (its arrival was the point: see lastHeard)
		if (m.type !== "emit") {
			this.sendError("unknown_type", `unknown message type ${JSON.stringify(m.type)}; the client messages are "hello", "emit" and "pong"`);
			return;
		}
		if (typeof m.channel !== "string") {
			this.sendError("bad_message", 'an emit message needs a string "channel"');
			return;
		}
		if (m.channel !== CH_SUBMIT) {
			this.sendError("forbidden_channel", `emitting on ${JSON.stringify(m.channel)} is not allowed; only "${CH_SUBMIT}"`);
			return;
		}
		if (!("data" in m)) {
			this.sendError("bad_message", 'an emit message needs a "data" field');
			return;
		}
		this.relay.emitSubmit(this, m.data);
	}

	/** The client hello: which role the client takes (it may say it again to change it). */
	private onHello(m: Record<string, unknown>): void {
		if (typeof m.version !== "number" || !Number.isInteger(m.version) || m.version < 1) {
			this.sendError("bad_message", 'a hello needs an integer "version" >= 1');
			return;
		}
		if (m.role !== "answerer" && m.role !== "observer") {
			this.sendError("bad_message", 'a hello needs a "role": "answerer" or "observer"');
			return;
		}
		const pong = m.pong ?? 0;
		if (typeof pong !== "number" || !Number.isInteger(pong) || pong < 0) {
			this.sendError("bad_message", 'a hello\'s "pong" must be an integer >= 0');
			return;
		}
		this.answersPings = pong >= PING;
		this.relay.setRole(this, m.role);
		this.send({ type: "welcome", version: CLIENT_HELLO, role: m.role });
	}
}

interface OpenForm {
	json: string;
	toolCallId: string | undefined;
	bytes: number;
}

/** A lone UTF-16 surrogate: legal in a JavaScript string, not valid Unicode. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `text` as a client holds it: JSON.stringify writes a lone surrogate as an escape such as
 * "\ud800", which a client (Python, msgspec) decodes as U+FFFD (String.prototype.toWellFormed,
 * not in Node's ES2022 typings). */
function asClientsHoldIt(text: string): string {
	return text.replace(LONE_SURROGATE, "\uFFFD");
}

function stringField(data: unknown, key: string): string | undefined {
	if (typeof data !== "object" || data === null || Array.isArray(data)) return undefined;
	const value = (data as Record<string, unknown>)[key];
	return typeof value === "string" ? value : undefined;
}

/** A form we opened as the host's external-UI provider: its open() promise, still pending. */
interface ProvidedForm {
	flowId: string;
	settle(error?: Error): void;
}

class Relay {
	private readonly pi: ExtensionAPI;
	/** Connected clients whose hello said they answer forms. */
	private answerers = 0;
	private readonly provided = new Set<ProvidedForm>();
	private graceTimer: NodeJS.Timeout | undefined;
	private pingTimer: NodeJS.Timeout | undefined;
	private lastTick = monotonic();
	private readonly provider = {
		version: 1 as const,
		id: PROVIDER_ID,
		open: (request: unknown): Promise<unknown> => this.openProvided(request),
	};
	private server: net.Server | undefined;
	private socketPath: string | undefined;
	private socketIno: number | undefined;
	private readonly clients = new Set<Client>();
	/** flowId -> serialized started payload, in start order (what a new client is replayed) */
	private readonly openForms = new Map<string, OpenForm>();
	private openFormBytes = 0;
	/** JSON [requestId, flowId] -> the clients that emitted such a submit, oldest first (null:
	 * that client has gone, and its verdict is still nobody else's) */
	private readonly outstanding = new Map<string, (Client | null)[]>();
	private outstandingCount = 0;
	private cwd: string = process.cwd();
	private disabled = false;
	/** Names this session's relay in every hello: a client that reaches the socket through a
	 * forward (ssh -L), where Pi's pid means nothing, still tells one session from the next. */
	private readonly sessionId = randomBytes(8).toString("hex");

	constructor(pi: ExtensionAPI) {
		this.pi = pi;
	}

	subscribe(): void {
		for (const channel of RELAYED_CHANNELS) {
			this.pi.events.on(channel, (data: unknown) => {
				try {
					this.onEvent(channel, data);
				} catch (e) {
					logErrorOnce(`event-${channel}`, `failed to relay ${channel}: ${(e as Error)?.message ?? String(e)}`);
				}
			});
		}
		this.pi.events.on(CH_EXTERNAL_UI, (data: unknown) => {
			try {
				this.onExternalUi(data);
			} catch (e) {
				logErrorOnce("external-ui", `external-UI negotiation failed: ${(e as Error)?.message ?? String(e)}`);
			}
		});
	}

	/** The host asks (outside its TUI) whether an external UI shows this form. We connect as the
	 * provider only while a client that answers forms is connected: observers never make a form
	 * wait, and with nobody to answer the host returns its non-interactive result at once. */
	private onExternalUi(data: unknown): void {
		if (typeof data !== "object" || data === null) return;
		const request = data as { version?: unknown; connect?: unknown };
		if (request.version !== 1 || typeof request.connect !== "function") return; // not a version we know
		if (this.answerers === 0 || this.server === undefined) return;
		const connected = (request.connect as (provider: unknown) => unknown).call(data, this.provider);
		if (connected !== true) {
			logErrorOnce(
				"provider-refused",
				"the host refused the relay as its external-UI provider (another provider connected first, or the version is not supported); forms the host opens are still relayed",
			);
		}
	}

	/** The host's open(request): pending while clients answer over the submit channel; settles when
	 * the host aborts the request's signal (the flow ended, whoever ended it), and rejects when no
	 * answering client is left after the grace period. */
	private openProvided(request: unknown): Promise<unknown> {
		const flowId = stringField(request, "flowId");
		const signal = typeof request === "object" && request !== null ? (request as { signal?: unknown }).signal : undefined;
		return new Promise<unknown>((resolve, reject) => {
			if (flowId === undefined || !(signal instanceof AbortSignal)) {
				reject(new Error("pi-ask relay: the external-UI request has no flowId or no signal"));
				return;
			}
			if (signal.aborted) {
				resolve(undefined);
				return;
			}
			const form: ProvidedForm = {
				flowId,
				settle: (error?: Error) => {
					if (!this.provided.delete(form)) return;
					signal.removeEventListener("abort", onAbort);
					if (error === undefined) resolve(undefined);
					else reject(error);
					if (this.provided.size === 0) this.stopGrace();
					this.keepAlive();
				},
			};
			const onAbort = (): void => form.settle();
			signal.addEventListener("abort", onAbort, { once: true });
			this.provided.add(form);
			this.keepAlive();
			if (this.answerers === 0) this.startGrace();
		});
	}

	/** Pings the answerers that answer pings, and drops those silent for too long. */
	private pingAnswerers(): void {
		const now = monotonic();
		// A tick later than its interval: the relay was not running for the difference (and on
		// resuming, timers run before what arrived meanwhile is read).
		const deaf = Math.max(0, now - this.lastTick - PING_MS);
		this.lastTick = now;
		for (const c of [...this.clients]) if (c.role === "answerer" && c.answersPings) c.checkAlive(now, deaf);
	}

	/** The relay never keeps Pi alive, except while a form it provides waits for an answer: then
	 * Pi is waiting on us (in `pi -p` nothing else may hold its event loop). */
	private keepAlive(): void {
		const server = this.server;
		if (server === undefined) return;
		if (this.provided.size > 0) server.ref();
		else server.unref();
	}

	setRole(client: Client, role: Role): void {
		if (client.role === role) return;
		client.role = role;
		if (role === "answerer") {
			this.answerers += 1;
			this.stopGrace();
		} else {
			this.answerers -= 1;
			if (this.answerers === 0 && this.provided.size > 0) this.startGrace();
		}
	}

	private startGrace(): void {
		if (this.graceTimer !== undefined || this.provided.size === 0) return;
		if (GRACE_MS === 0) {
			this.failProvided();
			return;
		}
		const timer = setTimeout(() => {
			try {
				if (this.graceTimer === timer) this.graceTimer = undefined;
				if (this.answerers === 0) this.failProvided();
			} catch (e) {
				logErrorOnce("grace", `failing unanswered forms failed: ${(e as Error)?.message ?? String(e)}`);
			}
		}, GRACE_MS);
		this.graceTimer = timer; // (kept referenced: Pi waits for this verdict)
	}

	private stopGrace(): void {
		if (this.graceTimer === undefined) return;
		clearTimeout(this.graceTimer);
		this.graceTimer = undefined;
	}

	/** No answering client came back: each provided form's open() rejects (the tool call ends as a
	 * tool error, the host disposes the flow) and is no longer replayed. */
	private failProvided(why?: string): void {
		const reason =
			why ??
			(GRACE_MS === 0
				? "no pi-ask client that answers forms is connected to the relay any more"
				: `no pi-ask client that answers forms has been connected to the relay for ${GRACE_MS} ms`);
		for (const form of [...this.provided]) {
			this.endForm(form.flowId, "grace");
			form.settle(new Error(reason));
		}
	}

	/** The tool call ended (answered, aborted or failed): its forms are no longer open. */
	toolCallEnded(toolCallId: string): void {
		// (A host in Python, the stand-in's, announces the id as clients hold it.)
		const held = asClientsHoldIt(toolCallId);
		for (const [flowId, form] of [...this.openForms]) {
			if (form.toolCallId === toolCallId || (form.toolCallId !== undefined && asClientsHoldIt(form.toolCallId) === held)) {
				this.forgetForm(flowId);
			}
		}
	}

	/** An open form ends without a completed: forgotten, and its clients told. */
	private endForm(flowId: string, reason: string): void {
		if (!this.openForms.has(flowId)) return;
		this.forgetForm(flowId);
		const data = JSON.stringify({ flowId, reason });
		const line = encodeLine(`{"type":"event","channel":"${CH_FLOW_ENDED}","data":${data},"replay":false}`);
		for (const c of [...this.clients]) c.writeLine(line);
	}

	private forgetForm(flowId: string): void {
		const form = this.openForms.get(flowId);
		if (form === undefined) return;
		this.openForms.delete(flowId);
		this.openFormBytes -= form.bytes;
	}

	private rememberForm(flowId: string, json: string, data: unknown): void {
		this.forgetForm(flowId); // a re-announcement moves to the end
		// UTF-16 units: close enough to bytes for a bound
		const form: OpenForm = { json, toolCallId: stringField(data, "toolCallId"), bytes: json.length };
		this.openForms.set(flowId, form);
		this.openFormBytes += form.bytes;
		while (this.openForms.size > MAX_REPLAY_FORMS || (this.openFormBytes > MAX_REPLAY_BYTES && this.openForms.size > 1)) {
			const oldest = this.openForms.keys().next().value as string;
			logErrorOnce("replay-bound", `forgetting the oldest open forms for replay: more than ${MAX_REPLAY_FORMS} forms or ${MAX_REPLAY_BYTES} bytes`);
			this.forgetForm(oldest);
		}
	}

	private onEvent(channel: string, emitted: unknown): void {
		// Only the protocol's keys of a submit-result cross the socket.
		const data = channel === CH_SUBMIT_RESULT ? protocolOnly(emitted) : emitted;
		const json = JSON.stringify(data === undefined ? null : data);
		const flowId = stringField(data, "flowId");
		let owner: Client | null | undefined;
		if (channel === CH_STARTED && flowId !== undefined) {
			this.rememberForm(flowId, json, data);
		} else if (channel === CH_COMPLETED && flowId !== undefined) {
			this.forgetForm(flowId);
		} else if (channel === CH_SUBMIT_RESULT) {
			// The host no longer has this flow (disposed, aborted): stop replaying it.
			if (flowId !== undefined && stringField(data, "error") === "flow_not_found") this.forgetForm(flowId);
			owner = this.takeOwner(stringField(data, "requestId"), flowId);
		}
		if (this.clients.size === 0) return;
		const head = `{"type":"event","channel":${JSON.stringify(channel)},"data":${json},"replay":false`;
		if (channel !== CH_SUBMIT_RESULT || owner === undefined) {
			const line = encodeLine(`${head}}`);
			for (const c of [...this.clients]) c.writeLine(line);
			return;
		}
		// Only the emitter's waiter may resolve from this verdict; others still see it.
		const own = encodeLine(`${head},"own":true}`);
		let foreign: Buffer | undefined;
		for (const c of [...this.clients]) {
			if (c === owner) c.writeLine(own);
			else c.writeLine((foreign ??= encodeLine(`${head},"own":false}`)));
		}
	}

	/** The client whose submit this verdict answers; null if it has gone, undefined if no client
	 * emitted such a submit (then the line carries no "own"). */
	private takeOwner(requestId: string | undefined, flowId: string | undefined): Client | null | undefined {
		if (requestId === undefined || flowId === undefined) return undefined;
		const key = JSON.stringify([requestId, flowId]);
		const waiting = this.outstanding.get(key);
		if (waiting === undefined) return undefined;
		const owner = waiting.shift();
		this.outstandingCount -= 1;
		if (waiting.length === 0) this.outstanding.delete(key);
		return owner;
	}

	private addOwner(client: Client, data: unknown): string | undefined {
		const requestId = stringField(data, "requestId");
		const flowId = stringField(data, "flowId");
		if (requestId === undefined || flowId === undefined) return undefined;
		const key = JSON.stringify([requestId, flowId]);
		const waiting = this.outstanding.get(key);
		if (waiting === undefined) this.outstanding.set(key, [client]);
		else waiting.push(client);
		this.outstandingCount += 1;
		while (this.outstandingCount > MAX_OUTSTANDING_SUBMITS) {
			// a host that never answers: forget the oldest
			const [oldKey, oldList] = this.outstanding.entries().next().value as [string, (Client | null)[]];
			oldList.shift();
			this.outstandingCount -= 1;
			if (oldList.length === 0) this.outstanding.delete(oldKey);
		}
		return key;
	}

	private dropOwner(client: Client, key: string): void {
		const waiting = this.outstanding.get(key);
		if (waiting === undefined) return;
		const index = waiting.lastIndexOf(client);
		if (index < 0) return;
		waiting.splice(index, 1);
		this.outstandingCount -= 1;
		if (waiting.length === 0) this.outstanding.delete(key);
	}

	emitSubmit(client: Client, data: unknown): void {
		data = this.withHostsFlowId(data);
		const key = this.addOwner(client, data);
		try {
			this.pi.events.emit(CH_SUBMIT, data);
		} catch (e) {
			if (key !== undefined) this.dropOwner(client, key);
			logErrorOnce("emit", `pi.events.emit failed: ${(e as Error)?.message ?? String(e)}`);
		}
	}

	/** A client names a form by its id as the client holds it: a lone surrogate in the host's
	 * flow id (a tool call id holding one: `tool:${toolCallId}`) is U+FFFD there, and the host
	 * would not know that id. The submit then names the open form's own id, so the form stays
	 * answerable; the host's verdict echoes its id, which the client decodes as it named it. */
	private withHostsFlowId(data: unknown): unknown {
		const flowId = stringField(data, "flowId");
		if (flowId === undefined || !flowId.includes("\uFFFD") || this.openForms.has(flowId)) return data;
		for (const id of this.openForms.keys()) {
			if (id !== flowId && asClientsHoldIt(id) === flowId) return { ...(data as Record<string, unknown>), flowId: id };
		}
		return data;
	}

	forget(client: Client): void {
		this.clients.delete(client);
		if (client.role === "answerer") this.setRole(client, "observer");
		// Its submits may still be answered: keep their places, so those verdicts reach nobody
		// else as their own.
		for (const waiting of this.outstanding.values()) {
			for (let i = 0; i < waiting.length; i++) if (waiting[i] === client) waiting[i] = null;
		}
	}

	listening(): boolean {
		return this.server !== undefined;
	}

	listen(cwd: string | undefined): void {
		if (typeof cwd === "string" && cwd !== "") this.cwd = cwd;
		if (this.server || this.disabled) return; // never listen twice
		const reg = registry();
		if (reg.current && reg.current !== this) reg.current.close("unknown");
		const dir = relayDir();
		const problem = prepareDir(dir);
		if (problem) {
			this.disabled = true;
			logErrorOnce(`dir:${dir}`, `relay disabled: ${problem}`);
			return;
		}
		const socketPath = path.join(dir, `pi-${process.pid}.sock`);
		const pathBytes = Buffer.byteLength(socketPath);
		if (pathBytes > MAX_SOCKET_PATH_BYTES) {
			// bind() would cut the path short (or fail later on chmod): say why instead.
			this.disabled = true;
			logErrorOnce(
				`long:${socketPath}`,
				`relay disabled: the socket path ${socketPath} is ${pathBytes} bytes, longer than the ${MAX_SOCKET_PATH_BYTES} bytes a Unix socket path may have; set PI_ASK_RELAY_DIR to a shorter directory (the same for Pi and its clients)`,
			);
			return;
		}
		removeStaleSockets(dir);
		// Bound under another name and renamed into place once listening and private: a client
		// that finds pi-<pid>.sock is never refused (bind() makes the file before listen()) and
		// never finds it with another mode.
		const boundPath = path.join(dir, boundName(process.pid));
		const server = net.createServer((socket) => {
			try {
				this.onConnection(socket);
			} catch (e) {
				logErrorOnce("connection", `connection setup failed: ${(e as Error)?.message ?? String(e)}`);
				socket.destroy();
			}
		});
		server.on("error", (e: Error) => {
			logErrorOnce(`server:${socketPath}`, `relay socket ${socketPath} failed, relay disabled: ${e.message}`);
			if (this.server === server) this.close("unknown");
		});
		this.server = server;
		this.socketPath = socketPath;
		reg.current = this;
		let published = false;
		const publish = (): void => {
			// (not if closed meanwhile: libuv unlinked the bound name)
			if (published || this.server !== server) return;
			published = true;
			try {
				fs.chmodSync(boundPath, 0o600);
				fs.renameSync(boundPath, socketPath);
				this.socketIno = fs.statSync(socketPath).ino;
			} catch (e) {
				logErrorOnce(`publish:${socketPath}`, `cannot make ${socketPath} private and put it in place: ${(e as Error).message}`);
				this.close("unknown");
			}
		};
		server.listen(boundPath, publish);
		// Node binds and listens on a path at once (only "listening" is emitted later): the name is
		// put in place now, so it exists when session_start has run, as a client that was told
		// of the new session expects.
		if (server.listening) publish();
		server.unref(); // the relay must never keep Pi alive
		if (PING_MS > 0) {
			this.lastTick = monotonic();
			const timer = setInterval(() => {
				try {
					this.pingAnswerers();
				} catch (e) {
					logErrorOnce("ping", `pinging clients failed: ${(e as Error)?.message ?? String(e)}`);
				}
			}, PING_MS);
			timer.unref();
			this.pingTimer = timer;
		}
	}

	private onConnection(socket: net.Socket): void {
		if (!this.server) {
			socket.destroy();
			return;
		}
		socket.unref();
		const client = new Client(this, socket);
		const observing = this.clients.size - this.answerers;
		this.clients.add(client);
		client.send({
			type: "hello",
			protocol: PROTOCOL,
			pid: process.pid,
			cwd: this.cwd,
			piVersion: piVersion(),
			socket: this.socketPath ?? "",
			sessionId: this.sessionId,
			// The client may say whether it answers forms (a client hello of this version).
			clientHello: CLIENT_HELLO,
			// An answerer whose hello says "pong" is pinged every pingMs and taken for gone after
			// pingTimeoutMs of silence (ping 0: no pings).
			ping: PING_MS > 0 ? PING : 0,
			pingMs: PING_MS,
			pingTimeoutMs: PING_TIMEOUT_MS,
			// The other clients connected now, by role.
			answering: this.answerers,
			observing,
			// How many replayed forms follow, so a client knows when its view is complete.
			replaying: this.openForms.size,
		});
		// Queued, then written as the client reads (never all at once).
		for (const form of this.openForms.values()) {
			client.writeLine(`{"type":"event","channel":"${CH_STARTED}","data":${form.json},"replay":true}`);
		}
	}

	/** Tells every client that the session ended, then closes and unlinks the socket. */
	close(reason: string): void {
		const server = this.server;
		const socketPath = this.socketPath;
		const ino = this.socketIno;
		this.server = undefined;
		this.socketPath = undefined;
		this.socketIno = undefined;
		this.openForms.clear();
		this.openFormBytes = 0;
		this.outstanding.clear();
		this.outstandingCount = 0;
		this.failProvided("the pi-ask relay closed (session end)");
		this.stopGrace();
		if (this.pingTimer !== undefined) {
			clearInterval(this.pingTimer);
			this.pingTimer = undefined;
		}
		const reg = registry();
		if (reg.current === this) reg.current = undefined;
		const line = JSON.stringify({ type: "session_end", reason: SESSION_END_REASONS.has(reason) ? reason : "unknown" });
		for (const c of [...this.clients]) {
			try {
				c.writeLine(line);
				c.end();
			} catch {
				c.close();
			}
		}
		this.clients.clear();
		this.answerers = 0;
		// The name goes before the socket stops accepting: a client that finds it is not refused.
		if (socketPath) {
			try {
				const st = fs.lstatSync(socketPath);
				if (st.ino === ino) fs.unlinkSync(socketPath); // (only if ours: not before the rename)
			} catch {
				// already gone
			}
		}
		if (server) {
			try {
				server.close(); // libuv unlinks the bound name synchronously (gone once renamed)
			} catch {
				// already closed
			}
		}
	}
}

export default function piAskRelay(pi: ExtensionAPI): void {
	for (const problem of ENV_PROBLEMS) logErrorOnce(`env:${problem}`, problem);
	const relay = new Relay(pi);
	try {
		relay.subscribe();
	} catch (e) {
		logErrorOnce("subscribe", `relay disabled: cannot subscribe to pi.events: ${(e as Error)?.message ?? String(e)}`);
		return;
	}
	pi.on("session_start", (_event, ctx) => {
		try {
			relay.listen(ctx?.cwd);
		} catch (e) {
			logErrorOnce("listen", `relay disabled: ${(e as Error)?.message ?? String(e)}`);
		}
	});
	pi.on("tool_execution_end", (event) => {
		try {
			if (typeof event?.toolCallId === "string") relay.toolCallEnded(event.toolCallId);
		} catch (e) {
			logErrorOnce("tool-end", `relay tool_execution_end failed: ${(e as Error)?.message ?? String(e)}`);
		}
	});
	pi.on("session_shutdown", (event) => {
		try {
			relay.close(typeof event?.reason === "string" ? event.reason : "unknown");
		} catch (e) {
			logErrorOnce("close", `relay close failed: ${(e as Error)?.message ?? String(e)}`);
		}
	});
}
