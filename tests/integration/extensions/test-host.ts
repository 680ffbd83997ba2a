// test-host.ts: a Pi extension that plays the pi-agent-ask host for integration tests.
//
// The real pi-agent-ask extension is not on npm; this host follows spec §3-§5 (logic in host-core.ts).
// Works on Pi 1.6.0 (node 22) and Pi 0.74.2 (node 20).
//
// Slash commands (usable from RPC mode as {"type":"prompt","message":"/<command> <args>"}):
//   /pi-ask-test-open <json>     json = {"toolCallId"?: string, "params": <ask_user input>,
//                                        "presentSingleAsMulti"?: boolean, "source"?: "tool"|"ask:resume"}
//                                opens a flow and returns at once; the form stays open until a submit,
//                                /pi-ask-test-cancel, /pi-ask-test-dispose or session shutdown.
//   /pi-ask-test-dispose <flowId>  ends the flow without a completed event.
//   /pi-ask-test-cancel <flowId>   cancels locally (completed with cancelled: true), like the TUI's Esc.
//   /pi-ask-test-list              reports the open flow ids.
// Every command reports through ctx.ui.notify (an RPC "extension_ui_request" record with method "notify")
// whose message is "pi-ask-test " + JSON, e.g.
//   pi-ask-test {"command":"open","ok":true,"flowId":"tool:t1"}
//   pi-ask-test {"command":"open","ok":false,"error":"invalid_input","issues":[{"path":...,"message":...}]}
//   pi-ask-test {"command":"open","ok":false,"error":"bad_arguments"|"schema","message":"..."}
//   pi-ask-test {"command":"dispose","ok":true|false,"flowId":"..."}
//   pi-ask-test {"command":"list","ok":true,"flowIds":[...]}
//
// Tool `ask_user` (TypeBox params per spec §2.1): opens a flow with the real tool call id
// (flowId "tool:<toolCallId>") and resolves with the AskResult when the flow completes (content: the
// result as JSON text, details: the result); abort signal or session shutdown -> disposed, cancelled result.
// Env PI_ASK_TEST_PRESENT_SINGLE_AS_MULTI=1 turns on "present single as multi" for tool calls.
//
// Faux model: provider "pi-ask-faux", model "scripted" (start Pi with --model pi-ask-faux/scripted).
//   user message "CALL <tool> <json>" or "CALL <tool>#<toolCallId> <json>" -> the model calls <tool>
//   with <json> as arguments (and that tool call id if given); after a tool result the model replies
//   "TOOL RESULT <tool>: <result text>"; any other message -> "ECHO: <text>".

import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import * as piAi from "@earendil-works/pi-ai";
import * as fs from "node:fs";
import * as path from "node:path";
import { Type } from "typebox";
import {
	type AskResult,
	buildResult,
	type FlowHandle,
	type NormalizedForm,
	type PreviewFileLoader,
	prepareForm,
	prepareParams,
	Runtime,
} from "./host-core.ts";

export const FAUX_PROVIDER = "pi-ask-faux";
export const FAUX_MODEL = "scripted";

const OptionSchema = Type.Object({
	value: Type.String(),
	label: Type.String(),
	description: Type.Optional(Type.String()),
	preview: Type.Optional(Type.String()),
	previewFile: Type.Optional(Type.String()),
	recommended: Type.Optional(Type.Boolean()),
});
const QuestionSchema = Type.Object({
	id: Type.String(),
	label: Type.Optional(Type.String()),
	prompt: Type.String(),
	type: Type.Optional(Type.Union([Type.Literal("single"), Type.Literal("multi"), Type.Literal("preview")])),
	required: Type.Optional(Type.Boolean()),
	options: Type.Array(OptionSchema),
});
const AskParamsSchema = Type.Object({
	title: Type.Optional(Type.String()),
	background: Type.Optional(Type.Boolean()),
	questions: Type.Array(QuestionSchema),
});

function previewLoader(cwd: string): PreviewFileLoader {
	return (file) => {
		const abs = path.resolve(cwd, file);
		try {
			const st = fs.statSync(abs);
			if (!st.isFile()) return { ok: false, absolutePath: abs, reason: "Expected a regular text file" };
			const buf = fs.readFileSync(abs);
			let text: string;
			try {
				text = new TextDecoder("utf-8", { fatal: true }).decode(buf);
			} catch (e) {
				return { ok: false, absolutePath: abs, reason: (e as Error).message };
			}
			if (text.includes("\u0000")) return { ok: false, absolutePath: abs, reason: "Expected UTF-8 text, not binary data" };
			if (text.trim() === "") return { ok: false, absolutePath: abs, reason: "Preview file is empty" };
			return { ok: true, text };
		} catch (e) {
			return { ok: false, absolutePath: abs, reason: (e as Error).message };
		}
	};
}

// ------------------------------------------------------------------------------------------------
// faux provider (pi-ai 1.6: fauxProvider + pi.registerProvider(provider); pi-ai 0.74: registerFauxProvider
// + pi.registerProvider(name, {api, streamSimple, models}))

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
	console.error("[pi-ask-test-host] no faux provider API found in @earendil-works/pi-ai; faux model not registered");
}

// ------------------------------------------------------------------------------------------------

function notify(ctx: { ui?: { notify?: (m: string, t?: "info" | "warning" | "error") => void } } | undefined, payload: Record<string, unknown>): void {
	const message = `pi-ask-test ${JSON.stringify(payload)}`;
	try {
		if (ctx?.ui?.notify) ctx.ui.notify(message, payload.ok === false ? "error" : "info");
		else console.error(message);
	} catch {
		console.error(message);
	}
}

function resultText(result: AskResult): string {
	return JSON.stringify(result);
}

export default function piAskTestHost(pi: ExtensionAPI): void {
	const runtime = new Runtime(pi.events);
	const handles = new Map<string, FlowHandle>();
	const presentSingleAsMultiForTools = process.env.PI_ASK_TEST_PRESENT_SINGLE_AS_MULTI === "1";

	const track = (h: FlowHandle) => {
		handles.set(h.flowId, h);
	};
	const untrack = (h: FlowHandle) => {
		if (handles.get(h.flowId) === h) handles.delete(h.flowId);
	};

	pi.registerCommand("pi-ask-test-open", {
		description: "pi-ask test host: open an ask flow from JSON {toolCallId?, params, presentSingleAsMulti?}",
		handler: async (args, ctx) => {
			let spec: { toolCallId?: unknown; params?: unknown; presentSingleAsMulti?: unknown; source?: unknown };
			try {
				spec = JSON.parse(args) as typeof spec;
				if (typeof spec !== "object" || spec === null || Array.isArray(spec)) throw new Error("expected a JSON object");
				if (spec.toolCallId !== undefined && typeof spec.toolCallId !== "string") throw new Error("toolCallId must be a string");
				if (spec.source !== undefined && spec.source !== "tool" && spec.source !== "ask:resume") throw new Error('source must be "tool" or "ask:resume"');
			} catch (e) {
				notify(ctx, { command: "open", ok: false, error: "bad_arguments", message: (e as Error).message });
				return;
			}
			const prepared = prepareForm(spec.params, {
				presentSingleAsMulti: spec.presentSingleAsMulti === true,
				loadPreviewFile: previewLoader(ctx?.cwd ?? process.cwd()),
			});
			if (!prepared.ok) {
				if (prepared.kind === "schema") notify(ctx, { command: "open", ok: false, error: "schema", message: prepared.message });
				else notify(ctx, { command: "open", ok: false, error: "invalid_input", issues: prepared.issues });
				return;
			}
			let handle: FlowHandle | undefined;
			handle = runtime.startFlow({
				form: prepared.form,
				...(typeof spec.toolCallId === "string" ? { toolCallId: spec.toolCallId } : {}),
				source: spec.source === "ask:resume" ? "ask:resume" : "tool",
				onComplete: () => handle && untrack(handle),
				onDispose: () => handle && untrack(handle),
			});
			track(handle);
			notify(ctx, { command: "open", ok: true, flowId: handle.flowId });
		},
	});

	pi.registerCommand("pi-ask-test-dispose", {
		description: "pi-ask test host: dispose an open flow (no completed event)",
		handler: async (args, ctx) => {
			const flowId = args.trim();
			const h = handles.get(flowId);
			if (h) h.dispose();
			notify(ctx, { command: "dispose", ok: h !== undefined, flowId });
		},
	});

	pi.registerCommand("pi-ask-test-cancel", {
		description: "pi-ask test host: cancel an open flow locally (completed, cancelled)",
		handler: async (args, ctx) => {
			const flowId = args.trim();
			const h = handles.get(flowId);
			const ok = h !== undefined && h.cancel();
			notify(ctx, { command: "cancel", ok, flowId });
		},
	});

	pi.registerCommand("pi-ask-test-list", {
		description: "pi-ask test host: list open flow ids",
		handler: async (_args, ctx) => {
			notify(ctx, { command: "list", ok: true, flowIds: runtime.activeFlowIds() });
		},
	});

	pi.registerTool({
		name: "ask_user",
		label: "Ask user",
		description:
			"Ask the user one or more multiple-choice questions and wait for the answers. " +
			"Each question has an id, a prompt, a type (single, multi or preview) and options with value and label.",
		parameters: AskParamsSchema,
		prepareArguments: (args: unknown) => prepareParams(args) as never,
		async execute(toolCallId, params, signal, _onUpdate, ctx) {
			const prepared = prepareForm(params, {
				presentSingleAsMulti: presentSingleAsMultiForTools,
				loadPreviewFile: previewLoader(ctx?.cwd ?? process.cwd()),
			});
			if (!prepared.ok) {
				if (prepared.kind === "schema") throw new Error(`Invalid ask_user payload: ${prepared.message}`);
				const text = ["Invalid ask_user payload:", ...prepared.issues.map((i) => `- ${i.path}: ${i.message}`)].join("\n");
				return { content: [{ type: "text" as const, text }], details: prepared.result as unknown };
			}
			const form: NormalizedForm = prepared.form;
			return await new Promise((resolve) => {
				let settled = false;
				const finish = (result: AskResult) => {
					if (settled) return;
					settled = true;
					signal?.removeEventListener("abort", onAbort);
					resolve({ content: [{ type: "text" as const, text: resultText(result) }], details: result as unknown });
				};
				const cancelled = () => buildResult(form, {}, "submit", true);
				let handle: FlowHandle | undefined;
				const onAbort = () => {
					handle?.dispose();
					finish(cancelled());
				};
				handle = runtime.startFlow({
					form,
					toolCallId,
					source: "tool",
					onComplete: (result) => {
						if (handle) untrack(handle);
						finish(result);
					},
					onDispose: () => {
						if (handle) untrack(handle);
						finish(cancelled());
					},
				});
				track(handle);
				if (signal?.aborted) onAbort();
				else signal?.addEventListener("abort", onAbort, { once: true });
			});
		},
	});

	registerFaux(pi);

	pi.on("session_shutdown", () => {
		runtime.disposeAll();
		handles.clear();
	});
}
