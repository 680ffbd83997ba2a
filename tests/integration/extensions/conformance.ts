// conformance.ts: runs the spec's examples.json through host-core.ts and compares every emitted payload.
//
// Usage:  "$NODE" tests/integration/extensions/conformance.ts [path/to/examples.json] [--verbose]
//   NODE must be node >= 22.18 (native TypeScript type stripping; the node 22 from scripts/pi-env.sh).
//   Default examples path: $PI_ASK_EXAMPLES, else /work/shared/spec/examples.json.
// Prints one line per failure and a summary line "N passed, M failed"; exit status 1 on any failure.
//
// Checked: examples[] (each on a fresh synchronous bus: start forms[X] with its toolCallId and
// presentSingleAsMulti, let the started microtask run, then send each step's request and compare the
// emitted list exactly: channel order, submit-result data except `message`, completed `result` with key
// order, plus the completed envelope), startedByForm (createdAt ignored, `flow:` ids by pattern),
// lifecycle L1-L5 and validations V1-V3 (prepared labels, issue paths; messages are our own wording).

import { readFileSync } from "node:fs";
import {
	type Bus,
	CH_COMPLETED,
	CH_STARTED,
	CH_SUBMIT,
	CH_SUBMIT_RESULT,
	ELABORATION_INSTRUCTION,
	prepareForm,
	prepareParams,
	Runtime,
	validateSemantics,
} from "./host-core.ts";

type Json = unknown;
interface Emitted {
	channel: string;
	data: Json;
}

class SyncBus implements Bus {
	private handlers = new Map<string, Array<(d: unknown) => void>>();
	readonly log: Emitted[] = [];
	emit(channel: string, data: unknown): void {
		this.log.push({ channel, data: JSON.parse(JSON.stringify(data ?? null)) });
		for (const h of [...(this.handlers.get(channel) ?? [])]) {
			try {
				h(data);
			} catch (e) {
				console.error(`handler error on ${channel}:`, e);
			}
		}
	}
	on(channel: string, handler: (d: unknown) => void): () => void {
		const list = this.handlers.get(channel) ?? [];
		list.push(handler);
		this.handlers.set(channel, list);
		return () => {
			const l = this.handlers.get(channel) ?? [];
			const i = l.indexOf(handler);
			if (i >= 0) l.splice(i, 1);
		};
	}
	take(): Emitted[] {
		return this.log.splice(0, this.log.length);
	}
}

const args = process.argv.slice(2);
const verbose = args.includes("--verbose");
const examplesPath =
	args.find((a) => !a.startsWith("--")) ?? process.env.PI_ASK_EXAMPLES ?? "/work/shared/spec/examples.json";
const spec = JSON.parse(readFileSync(examplesPath, "utf8")) as {
	forms: Record<string, { toolCallId?: string; presentSingleAsMulti?: boolean; params: Json }>;
	startedByForm: Record<string, Record<string, Json>>;
	examples: Array<{ id: number; title: string; form: string; steps: Array<{ request: Json; emitted: Json[] }> }>;
	lifecycle: Record<string, Json>;
	validations: Record<string, { raw: Json; result: { ok: boolean; preparedLabels: Json; issues: Array<{ path: string }> } }>;
};

let passed = 0;
let failed = 0;
function report(name: string, problems: string[]): void {
	if (problems.length === 0) {
		passed++;
		if (verbose) console.log(`ok   ${name}`);
	} else {
		failed++;
		console.log(`FAIL ${name}`);
		for (const p of problems) console.log(`     ${p}`);
	}
}

const FLOW_RE = /^flow:\d+:[0-9a-z]+$/;
const PLACEHOLDER_FLOW = "flow:<epoch-ms>:<base36-random>";
const s = (v: unknown) => JSON.stringify(v);

/** Expected payloads use the reference's fixed instruction text; ours is our own wording. */
function canonResult(r: Json): Json {
	const copy = JSON.parse(JSON.stringify(r)) as Record<string, Record<string, unknown>>;
	if (copy && typeof copy === "object" && copy.elaboration && typeof copy.elaboration === "object") {
		copy.elaboration.instruction = "<instruction>";
	}
	return copy;
}

function replaceFlowId(v: Json, flowId: string): Json {
	return JSON.parse(JSON.stringify(v).split(PLACEHOLDER_FLOW).join(flowId));
}

async function tick(): Promise<void> {
	await new Promise<void>((r) => setImmediate(r));
}

function startForm(runtime: Runtime, formName: string) {
	const f = spec.forms[formName];
	const prepared = prepareForm(f.params, { presentSingleAsMulti: f.presentSingleAsMulti === true });
	if (!prepared.ok) throw new Error(`form ${formName} did not validate: ${s(prepared)}`);
	return runtime.startFlow({ form: prepared.form, ...(f.toolCallId ? { toolCallId: f.toolCallId } : {}) });
}

// --- startedByForm -----------------------------------------------------------------------------
for (const [formName, expected] of Object.entries(spec.startedByForm)) {
	const bus = new SyncBus();
	const runtime = new Runtime(bus);
	const problems: string[] = [];
	const handle = startForm(runtime, formName);
	if (bus.log.length !== 0) problems.push("started was emitted synchronously (must be a microtask)");
	await tick();
	const log = bus.take();
	if (log.length !== 1 || log[0].channel !== CH_STARTED) {
		problems.push(`expected one started event, got ${s(log.map((e) => e.channel))}`);
	} else {
		const got = log[0].data as Record<string, unknown>;
		if (typeof got.createdAt !== "number") problems.push("createdAt is not a number");
		const exp = { ...expected };
		if (exp.flowId === PLACEHOLDER_FLOW) {
			if (typeof got.flowId !== "string" || !FLOW_RE.test(got.flowId)) problems.push(`flowId ${s(got.flowId)} does not match flow:<ms>:<base36>`);
			exp.flowId = got.flowId;
		}
		if (got.flowId !== handle.flowId) problems.push("started flowId differs from the handle");
		exp.createdAt = got.createdAt;
		if (s(got) !== s(exp)) problems.push(`started mismatch\n       got ${s(got)}\n       exp ${s(exp)}`);
	}
	runtime.disposeAll();
	report(`startedByForm ${formName}`, problems);
}

// --- examples ----------------------------------------------------------------------------------
for (const ex of spec.examples) {
	const bus = new SyncBus();
	const runtime = new Runtime(bus);
	const problems: string[] = [];
	const handle = startForm(runtime, ex.form);
	await tick();
	bus.take(); // started (checked above)
	const f = spec.forms[ex.form];
	ex.steps.forEach((step, stepIndex) => {
		const request = replaceFlowId(step.request, handle.flowId);
		bus.emit(CH_SUBMIT, request);
		const log = bus.take();
		if (log.length === 0 || log[0].channel !== CH_SUBMIT) {
			problems.push(`step ${stepIndex + 1}: submit not first in log`);
			return;
		}
		const got = log.slice(1);
		const expected = (step.emitted as Array<{ channel: string; data?: Json; result?: Json }>).map((e) =>
			replaceFlowId(e, handle.flowId),
		) as Array<{ channel: string; data?: Record<string, unknown>; result?: Json }>;
		if (s(got.map((e) => e.channel)) !== s(expected.map((e) => e.channel))) {
			problems.push(`step ${stepIndex + 1}: channels ${s(got.map((e) => e.channel))} != ${s(expected.map((e) => e.channel))}`);
			return;
		}
		got.forEach((g, k) => {
			const e = expected[k];
			const gd = g.data as Record<string, unknown>;
			if (g.channel === CH_SUBMIT_RESULT) {
				const exp = { ...(e.data as Record<string, unknown>) };
				delete exp["(upstream also sends state)"];
				const gotCopy = { ...gd };
				if ("message" in exp) {
					if (typeof gotCopy.message !== "string" || gotCopy.message === "") problems.push(`step ${stepIndex + 1}: message missing`);
					exp.message = "<message>";
					gotCopy.message = "<message>";
				}
				if ("state" in gotCopy) problems.push(`step ${stepIndex + 1}: submit-result carries a state key`);
				if (s(gotCopy) !== s(exp)) problems.push(`step ${stepIndex + 1}: submit-result\n       got ${s(gotCopy)}\n       exp ${s(exp)}`);
			} else if (g.channel === CH_COMPLETED) {
				const res = gd.result as Record<string, unknown>;
				const elab = res.elaboration as Record<string, unknown> | undefined;
				if (elab && (typeof elab.instruction !== "string" || elab.instruction !== ELABORATION_INSTRUCTION)) {
					problems.push(`step ${stepIndex + 1}: elaboration instruction is not ours`);
				}
				if (s(canonResult(res)) !== s(canonResult(e.result))) {
					problems.push(`step ${stepIndex + 1}: completed result\n       got ${s(res)}\n       exp ${s(e.result)}`);
				}
				const envelope = { ...gd, result: null, completedAt: 0 };
				const expEnvelope: Record<string, unknown> = { version: 1, flowId: handle.flowId };
				if (f.toolCallId) expEnvelope.toolCallId = f.toolCallId;
				Object.assign(expEnvelope, { source: "tool", result: null, completedAt: 0 });
				if (typeof gd.completedAt !== "number") problems.push(`step ${stepIndex + 1}: completedAt not a number`);
				if (s(envelope) !== s(expEnvelope)) problems.push(`step ${stepIndex + 1}: completed envelope ${s(envelope)} != ${s(expEnvelope)}`);
			}
		});
	});
	runtime.disposeAll();
	report(`example ${ex.id}: ${ex.title}`, problems);
}

// --- lifecycle ---------------------------------------------------------------------------------
{
	const formA = prepareForm(spec.forms.A.params);
	if (!formA.ok) throw new Error("form A invalid");
	const submitOf = (entry: Json): Json => (entry as { data: Json }).data;
	const chans = (log: Emitted[]) => log.map((e) => e.channel);
	const L = spec.lifecycle as Record<string, Array<Record<string, unknown>>>;

	// L1: submit before the started microtask: completes, started never emitted.
	{
		const bus = new SyncBus();
		const rt = new Runtime(bus);
		rt.startFlow({ form: formA.form, toolCallId: "call-A" });
		bus.emit(CH_SUBMIT, submitOf(L.L1[0]));
		await tick();
		const log = bus.take();
		const problems: string[] = [];
		if (s(chans(log)) !== s(L.L1.map((e) => e.channel))) problems.push(`channels ${s(chans(log))}`);
		else {
			const res = (log[1].data as { result: { answers: Json } }).result.answers;
			if (s(res) !== s(L.L1[1].resultAnswers)) problems.push(`answers ${s(res)}`);
			if (s(log[2].data) !== s(L.L1[2].data)) problems.push(`ack ${s(log[2].data)}`);
		}
		report("lifecycle L1", problems);
	}
	// L2: dispose, then a submit gets flow_not_found, no completed.
	{
		const bus = new SyncBus();
		const rt = new Runtime(bus);
		const h = rt.startFlow({ form: formA.form, toolCallId: "call-A" });
		await tick();
		h.dispose();
		bus.emit(CH_SUBMIT, submitOf(L.L2[1]));
		const log = bus.take();
		const problems: string[] = [];
		if (s(chans(log)) !== s(L.L2.map((e) => e.channel))) problems.push(`channels ${s(chans(log))}`);
		else {
			const ack = { ...(log[2].data as Record<string, unknown>), message: "" };
			if (s(ack) !== s({ ...(L.L2[2].data as Record<string, unknown>), message: "" })) problems.push(`ack ${s(log[2].data)}`);
		}
		report("lifecycle L2", problems);
	}
	// L3: disposeAll: no submit-result at all.
	{
		const bus = new SyncBus();
		const rt = new Runtime(bus);
		rt.startFlow({ form: formA.form, toolCallId: "call-A" });
		await tick();
		rt.disposeAll();
		bus.emit(CH_SUBMIT, { version: 1, requestId: "r", flowId: "tool:call-A", response: { kind: "cancel" } });
		await tick();
		const log = bus.take();
		report("lifecycle L3", s(chans(log)) === s(L.L3) ? [] : [`channels ${s(chans(log))}`]);
	}
	// L4: disposed in the same turn: nothing emitted.
	{
		const bus = new SyncBus();
		const rt = new Runtime(bus);
		rt.startFlow({ form: formA.form, toolCallId: "call-A" }).dispose();
		await tick();
		const log = bus.take();
		report("lifecycle L4", s(chans(log)) === s(L.L4) ? [] : [`channels ${s(chans(log))}`]);
	}
	// L5: same flowId twice; disposing the older removes the shared entry.
	{
		const bus = new SyncBus();
		const rt = new Runtime(bus);
		const older = rt.startFlow({ form: formA.form, toolCallId: "call-A", source: "tool" });
		rt.startFlow({ form: formA.form, toolCallId: "call-A", source: "ask:resume" });
		await tick();
		older.dispose();
		bus.emit(CH_SUBMIT, { version: 1, requestId: "r", flowId: "tool:call-A", response: { kind: "cancel" } });
		const log = bus.take();
		const problems: string[] = [];
		if (s(chans(log)) !== s(L.L5.map((e) => e.channel))) problems.push(`channels ${s(chans(log))}`);
		else {
			if ((log[0].data as { source: string }).source !== "tool" || (log[1].data as { source: string }).source !== "ask:resume") {
				problems.push("started sources");
			}
			const ack = { ...(log[3].data as Record<string, unknown>), message: "" };
			if (s(ack) !== s({ ...(L.L5[3].data as Record<string, unknown>), message: "" })) problems.push(`ack ${s(log[3].data)}`);
		}
		report("lifecycle L5", problems);
	}
}

// --- validations -------------------------------------------------------------------------------
for (const [name, v] of Object.entries(spec.validations)) {
	const problems: string[] = [];
	const prepared = prepareParams(v.raw) as { questions?: Array<{ options?: Array<{ label?: unknown }> }> };
	const labels = (prepared.questions ?? []).map((q) => (q.options ?? []).map((o) => (o.label === undefined ? null : o.label)));
	if (s(labels) !== s(v.result.preparedLabels)) problems.push(`prepared labels ${s(labels)} != ${s(v.result.preparedLabels)}`);
	const issues = validateSemantics(prepared);
	const paths = issues.map((i) => i.path);
	const expPaths = v.result.issues.map((i) => i.path);
	if (s(paths) !== s(expPaths)) problems.push(`issue paths ${s(paths)} != ${s(expPaths)}`);
	if (issues.some((i) => typeof i.message !== "string" || i.message === "")) problems.push("empty issue message");
	const outcome = prepareForm(v.raw);
	if (outcome.ok) problems.push("prepareForm accepted an invalid form");
	report(`validation ${name}`, problems);
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
