// pi-ask-standin.ts: a stand-in for the pi-agent-ask host extension, for trying and testing bridges
// against a real Pi. It keeps NO protocol rule: every decision (form validation, the started payload,
// submit checks, results) is made by pi_ask_core.FlowHost in a Python process (pi_ask_sdk.testing.standin)
// that this extension reaches over a private Unix socket. The extension only forwards.
//
// Never on by accident: it does nothing at all unless PI_ASK_STANDIN_SOCKET names the socket of a
// running stand-in server (`pi-ask try` and the pytest kit set it), except that PI_ASK_STANDIN_FAUX=1
// registers the faux model alone. The socket's directory must be a
// real directory owned by this uid with mode 0700, and the socket must be ours: the same trust rules as
// the relay. Works on Pi 1.6.0 (node 22) and Pi 0.74.2 (node 20).
//
// What it registers (each session: Pi calls this factory again after /new, /resume, /fork, /reload):
//   tool `ask_user`: opens a flow with the real tool call id; resolves with the AskResult when the flow
//     completes (content: the result as JSON text; details: the result). Abort -> the flow completes cancelled.
//     In the TUI a background call (`background: true`) returns a queued receipt at once; the server
//     opens the queued forms one at a time and sends each answer, which is delivered to the model as
//     an `ask:background-answer` message (pi.sendMessage). The agent's abort never reaches them.
//     Outside the TUI it first negotiates an external UI (pi-agent-ask:external-ui) as the real host
//     does: no provider -> the non-interactive (cancelled) result at once, no events; the provider's
//     failure -> a tool error. A completed cancel ends the agent's turn (ctx.abort()).
//   /pi-ask-test-open <json>       {"toolCallId"?, "params", "presentSingleAsMulti"?, "source"?}
//   /pi-ask-test-cancel <flowId>   cancel locally, like the TUI's Esc (completed, cancelled)
//   /pi-ask-test-dispose <flowId>  end without a completed event
//   /pi-ask-test-list              the open flow ids
//   /pi-ask-test-local <json>      {"flowId", "answers"}: what the TUI user typed (a cancel reports it)
//   /pi-ask-test-complete <json>   {"flowId", "response"}: the TUI user submits (or cancels)
//   Each command reports with ctx.ui.notify("pi-ask-test " + JSON) (an RPC extension_ui_request).
//   faux model `pi-ask-faux/scripted`: a user message "CALL <tool>[#<toolCallId>] <json>" makes it call
//   <tool> with <json>; after a tool result it says "TOOL RESULT <tool>: <text>"; else "ECHO: <text>".
//
// Link protocol (JSON lines, this extension <-> Python), see pi_ask_sdk/testing/standin/__init__.py.

import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import * as piAi from "@earendil-works/pi-ai";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { Type } from "typebox";

const ENV_SOCKET = "PI_ASK_STANDIN_SOCKET";
const CH_SUBMIT = "pi-agent-ask:submit";
const CH_EXTERNAL_UI = "pi-agent-ask:external-ui";
const EMITTABLE = new Set(["pi-agent-ask:started", "pi-agent-ask:completed", "pi-agent-ask:submit-result"]);
const COMMANDS = ["open", "cancel", "dispose", "list", "local", "complete"] as const;
const MAX_LINE_BYTES = 256 * 1024 * 1024;
const ENV_TIMEOUT = "PI_ASK_STANDIN_TIMEOUT"; // pi_ask_sdk.testing.standin.ENV_TIMEOUT
const DEFAULT_TIMEOUT_S = 10;

/** How long the server may take to answer a request or a ping (seconds, PI_ASK_STANDIN_TIMEOUT). */
function replyTimeoutMs(): number {
	const raw = process.env[ENV_TIMEOUT];
	if (raw === undefined || raw === "") return DEFAULT_TIMEOUT_S * 1000;
	const seconds = Number(raw);
	if (Number.isFinite(seconds) && seconds > 0) return seconds * 1000;
	log(`${ENV_TIMEOUT}=${raw} is not a positive number of seconds; using ${DEFAULT_TIMEOUT_S}`);
	return DEFAULT_TIMEOUT_S * 1000;
}

export const FAUX_PROVIDER = "pi-ask-faux";
export const FAUX_MODEL = "scripted";

function log(message: string): void {
	try {
		console.error(`[pi-ask-standin] ${message}`);
	} catch {
		// nothing else to do
	}
}

/** Same rules as the relay: a private directory of ours, and a socket of ours. */
function unsafePath(socketPath: string): string | undefined {
	const uid = typeof process.getuid === "function" ? process.getuid() : undefined;
	try {
		const dir = fs.lstatSync(path.dirname(socketPath));
		if (!dir.isDirectory()) return "its directory is not a directory (symlinks are refused)";
		if (uid !== undefined && dir.uid !== uid) return `its directory is owned by uid ${dir.uid}, not ${uid}`;
		if ((dir.mode & 0o077) !== 0) return `its directory has mode ${(dir.mode & 0o777).toString(8)}; it must be 0700`;
		const sock = fs.lstatSync(socketPath);
		if (!sock.isSocket()) return "it is not a Unix socket";
		if (uid !== undefined && sock.uid !== uid) return `it is owned by uid ${sock.uid}, not ${uid}`;
	} catch (e) {
		return (e as Error).message;
	}
	return undefined;
}

type Message = Record<string, unknown>;

// Values nested deeper than this reach Python as this marker: no valid field of a form or a submit
// is that deep, so the core refuses or ignores it exactly where it would refuse or ignore the
// original, and neither side's JSON decoder can be exhausted (it also breaks reference cycles).
const MAX_DEPTH = 64;
const TOO_DEEP = Object.freeze({ "pi-ask-standin": "nested too deep" });

function limitDepth(input: unknown, depth: number): unknown {
	let value = input;
	if (typeof value !== "object" || value === null) return value;
	const toJSON = (value as { toJSON?: unknown }).toJSON;
	if (typeof toJSON === "function") value = toJSON.call(value); // as JSON.stringify does, once
	if (typeof value !== "object" || value === null) return value;
	if (depth >= MAX_DEPTH) return TOO_DEEP;
	if (Array.isArray(value)) return value.map((item) => limitDepth(item, depth + 1));
	const copy: Record<string, unknown> = {};
	for (const [key, item] of Object.entries(value)) copy[key] = limitDepth(item, depth + 1);
	return copy;
}
interface ToolWaiter {
	resolve(message: Message): void;
	reject(error: Error): void;
	fallback?: unknown; // the core's cancelled result, used if the call is aborted or the link dies
	timer?: ReturnType<typeof setTimeout>; // until the server acknowledges the request
	interim?: (message: Message) => void; // the server's steps before the reply (negotiate, opened)
}

/** One connection to the Python stand-in server, for one Pi session.
 *
 * Nothing here waits on the server without a bound: every request must be acknowledged (a report,
 * `opened`, a result or an error) within the reply timeout, and while a form is open the server
 * must answer a ping within it too; else the link counts as lost. An abort ends its call at once. */
class Link {
	private socket: net.Socket | undefined;
	private chunks: Buffer[] = [];
	private pending = 0;
	private nextRef = 0;
	private readonly waiters = new Map<number, ToolWaiter>();
	private closed = false;
	private readonly pi: ExtensionAPI;
	private readonly timeoutMs = replyTimeoutMs();
	private heartbeat: ReturnType<typeof setInterval> | undefined;
	private pingOutstanding = false;

	constructor(pi: ExtensionAPI, socketPath: string) {
		this.pi = pi;
		const socket = net.createConnection(socketPath);
		this.socket = socket;
		socket.on("data", (chunk: Buffer) => this.guard(() => this.onData(chunk)));
		socket.on("error", (e: Error) => this.guard(() => this.lost(`stand-in link failed: ${e.message}`)));
		socket.on("close", () => this.guard(() => this.lost("stand-in link closed")));
		socket.unref(); // never keep Pi alive
		this.send({ type: "hello", pid: process.pid, cwd: process.cwd() });
	}

	private guard(fn: () => void): void {
		try {
			fn();
		} catch (e) {
			log(`handler failed: ${(e as Error)?.stack ?? String(e)}`);
		}
	}

	send(message: Message): void {
		if (this.closed || !this.socket || this.socket.destroyed) return;
		let line: string;
		try {
			line = JSON.stringify(limitDepth(message, -1));
		} catch (e) {
			// e.g. a submit whose data cannot be serialized: the core sees null and says why
			line = JSON.stringify({ ...message, data: null, unserializable: (e as Error).message });
		}
		this.socket.write(`${line}\n`);
	}

	/** Sends a request and waits (bounded) for the server's acknowledgement carrying the same ref;
	 * `interim` gets the server's steps before it (negotiate, opened). */
	request(message: Message, onRef?: (ref: number) => void, interim?: (message: Message) => void): Promise<Message> {
		const ref = ++this.nextRef;
		return new Promise<Message>((resolve, reject) => {
			if (this.closed) {
				reject(new Error("the pi-ask stand-in host is not connected"));
				return;
			}
			const timer = setTimeout(() => this.guard(() => this.unanswered(ref)), this.timeoutMs);
			timer.unref();
			this.waiters.set(ref, { resolve, reject, timer, interim });
			this.startHeartbeat();
			onRef?.(ref);
			this.send({ ...message, ref });
		});
	}

	/** The call of `ref` was aborted: tell the server (if it listens) and end the call now. */
	abort(ref: number): void {
		this.send({ type: "abort", ref });
		const waiter = this.take(ref);
		if (!waiter) return;
		if (waiter.fallback !== undefined) waiter.resolve(this.fallbackResult(ref, waiter.fallback));
		else waiter.reject(new Error("ask_user was aborted before the pi-ask stand-in host opened its form"));
	}

	private unanswered(ref: number): void {
		const waiter = this.take(ref);
		if (!waiter) return;
		this.send({ type: "failed", ref }); // a server that wakes up later drops the form (no completed)
		const seconds = this.timeoutMs / 1000;
		waiter.reject(
			new Error(
				`the pi-ask stand-in host (the Python server at ${ENV_SOCKET}) did not answer within ${seconds} s ` +
					`(is it stopped or busy? raise ${ENV_TIMEOUT} to wait longer)`,
			),
		);
	}

	private take(ref: number): ToolWaiter | undefined {
		const waiter = this.waiters.get(ref);
		if (!waiter) return undefined;
		this.waiters.delete(ref);
		if (waiter.timer) clearTimeout(waiter.timer);
		if (this.waiters.size === 0) this.stopHeartbeat();
		return waiter;
	}

	private fallbackResult(ref: number, result: unknown): Message {
		return { type: "result", ref, result, text: JSON.stringify(result) };
	}

	// While a request or a form is pending, a server that stops answering (e.g. a stopped process,
	// whose socket stays open) is noticed by its pings going unanswered.
	private startHeartbeat(): void {
		if (this.heartbeat) return;
		this.pingOutstanding = false;
		this.heartbeat = setInterval(() => this.guard(() => this.beat()), this.timeoutMs);
		this.heartbeat.unref();
	}

	private stopHeartbeat(): void {
		if (this.heartbeat) clearInterval(this.heartbeat);
		this.heartbeat = undefined;
	}

	private beat(): void {
		if (this.pingOutstanding) {
			this.lost(`the pi-ask stand-in host did not answer a ping within ${this.timeoutMs / 1000} s (${ENV_TIMEOUT})`);
			return;
		}
		this.pingOutstanding = true;
		this.send({ type: "ping" });
	}

	setFallback(ref: number, result: unknown): void {
		const waiter = this.waiters.get(ref);
		if (!waiter) return;
		waiter.fallback = result;
		if (waiter.timer) clearTimeout(waiter.timer); // acknowledged: the form stays open, unbounded
		waiter.timer = undefined;
	}

	private onData(chunk: Buffer): void {
		let start = 0;
		while (start < chunk.length) {
			const nl = chunk.indexOf(0x0a, start);
			const piece = chunk.subarray(start, nl < 0 ? chunk.length : nl);
			if (this.pending + piece.length > MAX_LINE_BYTES) {
				this.lost("stand-in link sent an oversized line");
				return;
			}
			if (nl < 0) {
				this.chunks.push(Buffer.from(piece));
				this.pending += piece.length;
				return;
			}
			const line = Buffer.concat([...this.chunks, piece]).toString("utf8");
			this.chunks = [];
			this.pending = 0;
			if (line.trim() !== "") this.guard(() => this.onMessage(JSON.parse(line) as Message));
			start = nl + 1;
		}
	}

	private onMessage(message: Message): void {
		this.pingOutstanding = false; // any line shows the server is alive
		if (message.type === "emit" && typeof message.channel === "string" && EMITTABLE.has(message.channel)) {
			this.pi.events.emit(message.channel, message.data);
			return;
		}
		if (message.type === "answer") {
			this.deliver(message);
			return;
		}
		const ref = typeof message.ref === "number" ? message.ref : undefined;
		if (ref === undefined) return;
		if (message.type === "opened" || message.type === "negotiate") {
			if (message.type === "opened") this.setFallback(ref, message.cancelled);
			this.waiters.get(ref)?.interim?.(message);
			return;
		}
		this.take(ref)?.resolve(message);
	}

	/** A background form ended: its answer reaches the model as a message, after the current
	 * turn if the agent is working (what the server decided: type, text, whether it wakes the agent). */
	private deliver(message: Message): void {
		this.pi.sendMessage(
			{ customType: String(message.customType), content: String(message.text), display: true, details: message.details },
			{ triggerTurn: message.triggerTurn === true, deliverAs: "followUp" },
		);
	}

	private lost(why: string): void {
		if (this.closed) return;
		this.closed = true;
		this.stopHeartbeat();
		this.socket?.destroy();
		this.socket = undefined;
		for (const ref of [...this.waiters.keys()]) {
			const waiter = this.take(ref);
			if (!waiter) continue;
			if (waiter.fallback !== undefined) waiter.resolve(this.fallbackResult(ref, waiter.fallback));
			else waiter.reject(new Error(why));
		}
	}

	close(): void {
		this.lost("session ended");
	}
}

// ------------------------------------------------------------------------------------------------
// external-UI negotiation (outside the TUI; spec Appendix B). The server decides whether a call
// negotiates and what follows; connect() must answer synchronously, inside the emit, so the one
// check that cannot be asked of the server lives here: a provider is accepted only during the
// emit, only the first, and only if it has version 1, a non-blank id and an open function.

interface ExternalProvider {
	version: 1;
	id: string;
	open(request: unknown): Promise<unknown>;
}

function isProvider(value: unknown): value is ExternalProvider {
	if (typeof value !== "object" || value === null) return false;
	const p = value as { version?: unknown; id?: unknown; open?: unknown };
	return p.version === 1 && typeof p.id === "string" && p.id.trim() !== "" && typeof p.open === "function";
}

function negotiate(pi: ExtensionAPI, mode: unknown, toolCallId: string): ExternalProvider | undefined {
	let provider: ExternalProvider | undefined;
	let open = true;
	const connection = {
		version: 1 as const,
		mode,
		toolCallId,
		connect(candidate: unknown): boolean {
			if (!open || provider !== undefined || !isProvider(candidate)) return false;
			provider = candidate;
			return true;
		},
	};
	try {
		pi.events.emit(CH_EXTERNAL_UI, connection);
	} finally {
		open = false;
	}
	return provider;
}

/** Calls the provider's open (after the flow started) and reports how it settled, unless the flow
 * ended first (the signal is aborted on every terminal path; a late settlement is ignored). */
function openProvider(link: Link, ref: number, provider: ExternalProvider, request: unknown, signal: AbortSignal): void {
	const full = { ...(typeof request === "object" && request !== null ? request : {}), signal };
	Promise.resolve()
		.then(() => (signal.aborted ? undefined : provider.open(full)))
		.then(
			(response) => {
				if (!signal.aborted) link.send({ type: "provided", ref, response });
			},
			(error: unknown) => {
				if (!signal.aborted) {
					link.send({ type: "provider_failed", ref, message: error instanceof Error ? error.message : String(error) });
				}
			},
		);
}

// ------------------------------------------------------------------------------------------------
// faux provider (pi-ai 1.6: fauxProvider + pi.registerProvider(provider); pi-ai 0.74: registerFauxProvider
// + pi.registerProvider(name, {api, streamSimple, models})). Not a protocol rule: a scripted model.

type AnyMessage = { role?: unknown; content?: unknown; toolName?: unknown };
type AssistantLike = ReturnType<typeof piAi.fauxAssistantMessage>;

function textOf(content: unknown): string {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content
		.map((b: unknown) => (typeof b === "object" && b !== null && (b as { type?: unknown }).type === "text" ? String((b as { text?: unknown }).text ?? "") : ""))
		.join("");
}

const CALL_RE = /^\s*CALL\s+([A-Za-z0-9_.:-]+?)(?:#(\S+))?\s+([\s\S]*)$/;

function scriptedReply(context: { messages?: unknown }): AssistantLike {
	const messages: AnyMessage[] = Array.isArray(context.messages) ? (context.messages as AnyMessage[]) : [];
	const last = messages[messages.length - 1];
	if (last && last.role === "toolResult") {
		const name = typeof last.toolName === "string" ? last.toolName : "tool";
		return piAi.fauxAssistantMessage(`TOOL RESULT ${name}: ${textOf(last.content)}`);
	}
	const text = last ? textOf(last.content) : "";
	const m = CALL_RE.exec(text);
	if (m) {
		try {
			const args = JSON.parse(m[3]) as Parameters<typeof piAi.fauxToolCall>[1];
			const call = m[2] ? piAi.fauxToolCall(m[1], args, { id: m[2] }) : piAi.fauxToolCall(m[1], args);
			return piAi.fauxAssistantMessage([call], { stopReason: "toolUse" });
		} catch (e) {
			return piAi.fauxAssistantMessage(`CALL ERROR: ${(e as Error).message}`);
		}
	}
	return piAi.fauxAssistantMessage(`ECHO: ${text}`);
}

const MODEL_DEF = {
	id: FAUX_MODEL,
	name: "pi-ask scripted faux model",
	reasoning: false,
	input: ["text"] as ("text" | "image")[],
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
	contextWindow: 128000,
	maxTokens: 16384,
};

type Step = (context: { messages?: unknown }) => AssistantLike;
interface LegacyFauxRegistration {
	api: string;
	setResponses(steps: Step[]): void;
	appendResponses(steps: Step[]): void;
}
interface LegacyPiAi {
	registerFauxProvider?: (options: { provider: string; models: (typeof MODEL_DEF)[] }) => LegacyFauxRegistration;
	getApiProvider?: (api: string) => { streamSimple?: unknown } | undefined;
}

function registerFaux(pi: ExtensionAPI): void {
	const mod = piAi as unknown as Record<string, unknown>;
	if (typeof mod.fauxProvider === "function") {
		const faux = piAi.fauxProvider({ provider: FAUX_PROVIDER, models: [MODEL_DEF] });
		const step = (context: { messages?: unknown }): AssistantLike => {
			faux.appendResponses([step]); // endless script
			return scriptedReply(context);
		};
		faux.setResponses([step]);
		pi.registerProvider(faux.provider);
		return;
	}
	const legacy = mod as LegacyPiAi;
	if (typeof legacy.registerFauxProvider === "function" && typeof legacy.getApiProvider === "function") {
		const reg = legacy.registerFauxProvider({ provider: FAUX_PROVIDER, models: [MODEL_DEF] });
		const step: Step = (context) => {
			reg.appendResponses([step]);
			return scriptedReply(context);
		};
		reg.setResponses([step]);
		const streamSimple = legacy.getApiProvider(reg.api)?.streamSimple;
		// Pi 0.74 API: registerProvider(name, config). Typed against 1.6 here, hence the casts.
		(pi.registerProvider as unknown as (name: string, config: Record<string, unknown>) => void)(FAUX_PROVIDER, {
			baseUrl: "http://localhost:0",
			apiKey: "faux",
			api: reg.api,
			streamSimple,
			models: [MODEL_DEF],
		});
		return;
	}
	log("no faux provider API found in @earendil-works/pi-ai; faux model not registered");
}

// ------------------------------------------------------------------------------------------------

type Notifier = { ui?: { notify?: (m: string, t?: "info" | "warning" | "error") => void } } | undefined;

function notify(ctx: Notifier, report: unknown): void {
	const message = `pi-ask-test ${JSON.stringify(report)}`;
	const failed = typeof report === "object" && report !== null && (report as { ok?: unknown }).ok === false;
	try {
		if (ctx?.ui?.notify) ctx.ui.notify(message, failed ? "error" : "info");
		else console.error(message);
	} catch {
		console.error(message);
	}
}

// Every field is left to the core's structural and semantic checks (label derivation included), so
// the schema only describes the input to the model; it decides nothing.
const AskParamsSchema = Type.Object(
	{
		title: Type.Optional(Type.Unknown({ description: "form title" })),
		background: Type.Optional(Type.Unknown()),
		questions: Type.Unknown({
			description:
				"questions: [{id, label?, prompt, type?: single|multi|preview, required?, options: [{value, label, description?, preview?, previewFile?, recommended?}]}]",
		}),
	},
	{ additionalProperties: true },
);

export default function piAskStandin(pi: ExtensionAPI): void {
	const socketPath = process.env[ENV_SOCKET];
	if (!socketPath) {
		// never on by accident; PI_ASK_STANDIN_FAUX=1 alone gives only the scripted model (to drive
		// another host, e.g. the real pi-agent-ask, through tool calls)
		if (process.env.PI_ASK_STANDIN_FAUX === "1") registerFaux(pi);
		return;
	}
	const problem = unsafePath(socketPath);
	if (problem) {
		log(`not loaded: ${ENV_SOCKET}=${socketPath} is unsafe: ${problem}`);
		return;
	}
	const link = new Link(pi, socketPath);

	pi.events.on(CH_SUBMIT, (data: unknown) => {
		link.send({ type: "submit", data: data === undefined ? null : data });
	});

	for (const name of COMMANDS) {
		pi.registerCommand(`pi-ask-test-${name}`, {
			description: `pi-ask stand-in host: ${name} (decided by pi_ask_core in Python)`,
			handler: async (args, ctx) => {
				try {
					const reply = await link.request({ type: "command", name, args });
					notify(ctx, reply.report);
				} catch (e) {
					notify(ctx, { command: name, ok: false, error: "host_unavailable", message: (e as Error).message });
				}
			},
		});
	}

	pi.registerTool({
		name: "ask_user",
		label: "Ask user",
		description:
			"Ask the user one or more multiple-choice questions and wait for the answers. " +
			"Each question has an id, a prompt, a type (single, multi or preview) and options with value and label.",
		parameters: AskParamsSchema,
		async execute(toolCallId, params, signal, _onUpdate, ctx) {
			let ref = 0;
			let provider: ExternalProvider | undefined;
			const ended = new AbortController(); // the provider's signal
			// Pi's run mode (older Pis have none); the server decides what it means.
			const mode = (ctx as { mode?: unknown } | undefined)?.mode;
			const onAbort = () => link.abort(ref); // ends the call now, even if the server is stuck
			const step = (message: Message): void => {
				if (message.type === "negotiate") {
					provider = negotiate(pi, mode, toolCallId);
					link.send({ type: "provider", ref, connected: provider !== undefined });
				} else if (message.type === "opened" && provider !== undefined && message.request !== undefined) {
					openProvider(link, ref, provider, message.request, ended.signal);
				}
			};
			let reply: Message;
			try {
				reply = await link.request(
					{ type: "tool", toolCallId, params, mode: typeof mode === "string" ? mode : null },
					(r) => {
						ref = r;
						if (signal?.aborted) queueMicrotask(onAbort);
						else signal?.addEventListener("abort", onAbort, { once: true });
					},
					step,
				);
			} finally {
				signal?.removeEventListener("abort", onAbort);
				ended.abort();
			}
			if (reply.type === "error") throw new Error(String(reply.message));
			// A cancel the host completed ends the agent's turn, as the real host does.
			const abort = (ctx as { abort?: unknown } | undefined)?.abort;
			if (reply.abort === true && typeof abort === "function") abort.call(ctx);
			return { content: [{ type: "text" as const, text: String(reply.text) }], details: reply.result };
		},
	});

	registerFaux(pi);

	pi.on("session_shutdown", () => {
		link.close();
	});
}
