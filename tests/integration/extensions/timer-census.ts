// timer-census.ts: counts the intervals the relay has running, for the test that its timers end
// with its session (tests/integration/test_relay_limits.py). Load it before the relay: it wraps
// the global setInterval / clearInterval once per process, and counts only intervals set from
// the relay's file. On stderr, at each session_start before the relay listens and once the
// relay has: "[timer-census] start intervals=<n>", "[timer-census] listening intervals=<n>".
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const KEY = Symbol.for("pi-ask-tests.timer-census");

function relayIntervals(): Set<unknown> {
	const g = globalThis as unknown as Record<symbol, Set<unknown> | undefined>;
	let live = g[KEY];
	if (live === undefined) {
		const seen = new Set<unknown>();
		live = seen;
		g[KEY] = seen;
		const set = globalThis.setInterval;
		const clear = globalThis.clearInterval;
		globalThis.setInterval = ((...args: Parameters<typeof setInterval>) => {
			const timer = set(...args);
			if ((new Error().stack ?? "").includes("pi-ask-relay")) seen.add(timer);
			return timer;
		}) as typeof setInterval;
		globalThis.clearInterval = ((timer: Parameters<typeof clearInterval>[0]) => {
			seen.delete(timer);
			clear(timer);
		}) as typeof clearInterval;
	}
	return live;
}

export default function timerCensus(pi: ExtensionAPI): void {
	const live = relayIntervals();
	pi.on("session_start", () => {
		console.error(`[timer-census] start intervals=${live.size}`);
		setImmediate(() => console.error(`[timer-census] listening intervals=${live.size}`));
	});
}
