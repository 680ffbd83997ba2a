// other-provider.ts: a second external-UI provider in the same Pi, for tests of the relay as a
// provider (which one the host takes, and that the loser keeps relaying). Its open() stays pending
// until the host aborts the request's signal, like the relay's. It also registers
// /other-emit-result <json>, which emits <json> on pi-agent-ask:submit-result as a host would (to
// see what the relay forwards of it).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function otherProvider(pi: ExtensionAPI): void {
	pi.events.on("pi-agent-ask:external-ui", (data: unknown) => {
		const connection = data as { connect?: (provider: unknown) => boolean };
		const provider = {
			version: 1,
			id: "test-other-provider",
			open: (request: { signal: AbortSignal }) =>
				new Promise((resolve) => request.signal.addEventListener("abort", () => resolve(undefined), { once: true })),
		};
		const connected = connection.connect?.(provider);
		console.error(`[other-provider] connected: ${String(connected)}`);
	});
	pi.registerCommand("other-emit-result", {
		description: "emit a submit-result as a host would (test only)",
		handler: async (args) => {
			pi.events.emit("pi-agent-ask:submit-result", JSON.parse(args));
		},
	});
}
