// pi-ask-relay.ts: a Pi extension that relays the pi-agent-ask event channels of `pi.events`
// to local clients over a private Unix domain socket (JSON lines, wire protocol version 1).
//
// Load it with:  pi -e "$(pi-ask relay-path)"
// See README.md next to this file for the wire protocol and the trust model.
//
// Design rules: never TCP; never crash or block Pi (every socket callback is guarded, slow clients are
// dropped); one socket per Pi process: <dir>/pi-<pid>.sock; listen on session_start, announce
// session_end and close on session_shutdown (Pi calls the factory again for every new session).
// Only type imports from Pi, so loading the relay costs no extra module graph.

import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";

const PROTOCOL = 1;
const MAX_LINE_BYTES = 1024 * 1024;
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

const CH_STARTED = "pi-agent-ask:started";
const CH_COMPLETED = "pi-agent-ask:completed";
const CH_SUBMIT = "pi-agent-ask:submit";
const CH_SUBMIT_RESULT = "pi-agent-ask:submit-result";
const RELAYED_CHANNELS = [CH_STARTED, CH_COMPLETED, CH_SUBMIT_RESULT] as const;

const SESSION_END_REASONS = new Set(["quit", "reload", "new", "resume", "fork"]);
const SOCKET_NAME_RE = /^pi-(\d+)\.sock$/;

type ErrorCode = "bad_json" | "line_too_long" | "unknown_type" | "forbidden_channel" | "bad_message";

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
	if (st.uid !== uid) return `socket directory ${dir} is owned by uid ${st.uid}, not by this process (uid ${uid})`;
	if ((st.mode & 0o077) !== 0) {
		return `socket directory ${dir} has mode ${(st.mode & 0o777).toString(8)}; it must not grant any group/other permission (chmod 700)`;
	}
	return undefined;
}

/** Unlinks sockets of dead Pi processes (and our own pid's leftover). Never touches live ones. */
function removeStaleSockets(dir: string): void {
	let names: string[];
	try {
		names = fs.readdirSync(dir);
	} catch {
		return;
	}
	for (const name of names) {
		const m = SOCKET_NAME_RE.exec(name);
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

class Client {
	readonly socket: net.Socket;
	private readonly relay: Relay;
	private chunks: Buffer[] = [];
	private pending = 0; // bytes in chunks
	private discarding = false;
	closed = false;

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

	/** Writes one pre-serialized line (without newline). Drops the client if it does not keep up. */
	writeLine(line: string): void {
		if (this.closed || this.socket.destroyed) return;
		this.socket.write(`${line}\n`);
		if (this.socket.writableLength > MAX_BUFFERED_BYTES) {
			logErrorOnce("slow-client", `dropping a client whose unsent output exceeds ${MAX_BUFFERED_BYTES} bytes`);
			this.close();
		}
	}

	send(message: Record<string, unknown>): void {
		this.writeLine(JSON.stringify(message));
	}

	sendError(code: ErrorCode, message: string): void {
		this.send({ type: "error", code, message });
	}

	close(): void {
		if (this.closed) return;
		this.closed = true;
		this.chunks = [];
		this.relay.forget(this);
		this.socket.destroy();
	}

	/** Graceful close: flush what was written, then FIN. */
	end(): void {
		if (this.closed) return;
		this.closed = true;
		this.relay.forget(this);
		this.socket.end();
		// do not wait forever for a peer that never reads
		setTimeout(() => this.socket.destroy(), 2000).unref();
	}

	private onData(chunk: Buffer): void {
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
		if (m.type !== "emit") {
			this.sendError("unknown_type", `unknown message type ${JSON.stringify(m.type)}; the only client message is "emit"`);
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
		this.relay.emitSubmit(m.data);
	}
}

class Relay {
	private readonly pi: ExtensionAPI;
	private server: net.Server | undefined;
	private socketPath: string | undefined;
	private socketIno: number | undefined;
	private readonly clients = new Set<Client>();
	/** flowId -> serialized started payload, in start order */
	private readonly openForms = new Map<string, string>();
	private cwd: string = process.cwd();
	private disabled = false;

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
	}

	private onEvent(channel: string, data: unknown): void {
		const json = JSON.stringify(data === undefined ? null : data);
		const flowId =
			typeof data === "object" && data !== null && typeof (data as { flowId?: unknown }).flowId === "string"
				? (data as { flowId: string }).flowId
				: undefined;
		if (channel === CH_STARTED && flowId !== undefined) {
			this.openForms.delete(flowId); // a re-announcement moves to the end
			this.openForms.set(flowId, json);
		} else if (channel === CH_COMPLETED && flowId !== undefined) {
			this.openForms.delete(flowId);
		}
		if (this.clients.size === 0) return;
		const line = `{"type":"event","channel":${JSON.stringify(channel)},"data":${json},"replay":false}`;
		for (const c of [...this.clients]) c.writeLine(line);
	}

	emitSubmit(data: unknown): void {
		try {
			this.pi.events.emit(CH_SUBMIT, data);
		} catch (e) {
			logErrorOnce("emit", `pi.events.emit failed: ${(e as Error)?.message ?? String(e)}`);
		}
	}

	forget(client: Client): void {
		this.clients.delete(client);
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
		removeStaleSockets(dir);
		const socketPath = path.join(dir, `pi-${process.pid}.sock`);
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
		server.listen(socketPath, () => {
			try {
				fs.chmodSync(socketPath, 0o600);
				this.socketIno = fs.statSync(socketPath).ino;
			} catch (e) {
				logErrorOnce(`chmod:${socketPath}`, `cannot chmod ${socketPath}: ${(e as Error).message}`);
				this.close("unknown");
			}
		});
		server.unref(); // the relay must never keep Pi alive
	}

	private onConnection(socket: net.Socket): void {
		if (!this.server) {
			socket.destroy();
			return;
		}
		socket.unref();
		const client = new Client(this, socket);
		this.clients.add(client);
		client.send({
			type: "hello",
			protocol: PROTOCOL,
			pid: process.pid,
			cwd: this.cwd,
			piVersion: piVersion(),
			socket: this.socketPath ?? "",
			// How many replayed forms follow, so a client knows when its view is complete.
			replaying: this.openForms.size,
		});
		for (const json of this.openForms.values()) {
			client.writeLine(`{"type":"event","channel":"${CH_STARTED}","data":${json},"replay":true}`);
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
		if (server) {
			try {
				server.close(); // libuv unlinks the path synchronously here
			} catch {
				// already closed
			}
		}
		if (socketPath) {
			try {
				const st = fs.lstatSync(socketPath);
				if (ino === undefined || st.ino === ino) fs.unlinkSync(socketPath);
			} catch {
				// already gone
			}
		}
	}
}

export default function piAskRelay(pi: ExtensionAPI): void {
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
	pi.on("session_shutdown", (event) => {
		try {
			relay.close(typeof event?.reason === "string" ? event.reason : "unknown");
		} catch (e) {
			logErrorOnce("close", `relay close failed: ${(e as Error)?.message ?? String(e)}`);
		}
	});
}
