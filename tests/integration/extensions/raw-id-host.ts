// raw-id-host.ts: a host of ask forms that keeps its flow ids as JavaScript holds them, as the real
// pi-agent-ask does (`tool:${toolCallId}`, submits matched verbatim), for tests of ids holding a
// lone UTF-16 surrogate. /raw-id-open <JSON string> opens a one-question form (q: a or b) for that
// tool call id (the JSON may escape a lone surrogate, "x\ud800y"); a submit naming its flow id
// exactly completes it, any other gets flow_not_found.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function rawIdHost(pi: ExtensionAPI): void {
	const open = new Set<string>();
	pi.registerCommand("raw-id-open", {
		description: "open a form whose tool call id is the JSON string given (test only)",
		handler: async (args) => {
			const toolCallId = JSON.parse(args) as string;
			const flowId = `tool:${toolCallId}`;
			open.add(flowId);
			const option = (value: string) => ({ value, label: value.toUpperCase() });
			const question = { id: "q", label: "Q", prompt: "Pick one", type: "single", required: false, options: [option("a"), option("b")] };
			pi.events.emit("pi-agent-ask:started", { version: 1, flowId, toolCallId, source: "tool", questions: [question], createdAt: Date.now() });
		},
	});
	pi.events.on("pi-agent-ask:submit", (data: unknown) => {
		const submit = data as { requestId: string; flowId: string };
		const { requestId, flowId } = submit;
		if (!open.delete(flowId)) {
			pi.events.emit("pi-agent-ask:submit-result", { version: 1, requestId, flowId, ok: false, error: "flow_not_found", message: "Ask flow is not active." });
			return;
		}
		const result = { cancelled: false, mode: "submit", questions: [], answers: {} };
		pi.events.emit("pi-agent-ask:completed", { version: 1, flowId, toolCallId: flowId.slice(5), source: "tool", result, completedAt: Date.now() });
		pi.events.emit("pi-agent-ask:submit-result", { version: 1, requestId, flowId, ok: true });
	});
}
