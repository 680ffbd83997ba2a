// host-core.ts: a headless pi-agent-ask host core (spec protocol.md §2-§5), pure TypeScript.
//
// No Pi imports and no Node imports: it runs inside Pi (through test-host.ts), under plain node 22
// (type stripping, used by conformance.ts) and type-checks with `tsc --noEmit --strict`.
// Only erasable TypeScript syntax is used (no enums, namespaces or parameter properties).
//
// Messages are this host's own wording; codes, issue paths, echoed ids and result structures follow
// the spec exactly. Keys that the spec calls "absent" are never set (not even to undefined).

export const CH_STARTED = "pi-agent-ask:started";
export const CH_COMPLETED = "pi-agent-ask:completed";
export const CH_SUBMIT = "pi-agent-ask:submit";
export const CH_SUBMIT_RESULT = "pi-agent-ask:submit-result";

export interface Bus {
	emit(channel: string, data: unknown): void;
	on(channel: string, handler: (data: unknown) => void): () => void;
}

export type QuestionType = "single" | "multi" | "preview";
export type FlowSource = "tool" | "ask:resume";

export interface AskOption {
	value: string;
	label: string;
	description?: string;
	preview?: string;
	previewFile?: string;
	recommended?: boolean;
}

export interface AskQuestion {
	id: string;
	label: string;
	prompt: string;
	type: QuestionType;
	requestedType?: QuestionType;
	presentedType?: QuestionType;
	required: boolean;
	options: AskOption[];
}

export interface NormalizedForm {
	title?: string;
	questions: AskQuestion[];
}

export interface Issue {
	path: string;
	message: string;
}

export interface AskResultAnswer {
	values: string[];
	labels: string[];
	indices: number[];
	customText?: string;
	note?: string;
	optionNotes?: Record<string, string>;
}

export interface AskQuestionSummary {
	id: string;
	label: string;
	prompt: string;
	type: QuestionType;
	presentedType?: QuestionType;
}

export interface ContextOption {
	value: string;
	label: string;
	description?: string;
	preview?: string;
	recommended?: boolean;
}

export interface ElaborationQuestionContext extends AskQuestionSummary {
	options: ContextOption[];
}

export type ElaborationItem =
	| {
			target: { kind: "question" };
			question: ElaborationQuestionContext;
			answered: boolean;
			answer?: AskResultAnswer;
			note: string;
	  }
	| {
			target: { kind: "option"; optionValue: string };
			question: ElaborationQuestionContext;
			option: ContextOption;
			selected: boolean;
			answered: boolean;
			answer?: AskResultAnswer;
			note: string;
	  };

export interface AskContinuationPayload {
	affectedQuestionIds: string[];
	preservedAnswers: Record<string, AskResultAnswer>;
	questionStates: Record<string, { status: "answered" | "needs_clarification" | "unanswered" }>;
	strategy: "refine_only";
}

export interface AskElaborationPayload {
	instruction: string;
	nextAction: "clarify_then_reask";
	items: ElaborationItem[];
}

export interface AskResult {
	title?: string;
	cancelled: boolean;
	mode: "submit" | "elaborate";
	questions: AskQuestionSummary[];
	answers: Record<string, AskResultAnswer>;
	continuation?: AskContinuationPayload;
	elaboration?: AskElaborationPayload;
}

/** Tool result for invalid input (§2.1); never part of an event. */
export interface InvalidInputResult {
	title?: unknown;
	cancelled: true;
	mode: "submit";
	questions: [];
	answers: Record<string, never>;
	error: { kind: "invalid_input"; issues: Issue[] };
}

export const ELABORATION_INSTRUCTION =
	"Reply to each clarification note first, briefly, using the question and option context given here. " +
	"These notes are questions, not final answers. Afterwards ask again only the questions that still need a " +
	"choice, and do not move on to a follow-up question before the note has been resolved.";

// ---------------------------------------------------------------------------------------------
// small helpers

function isObject(v: unknown): v is Record<string, unknown> {
	return typeof v === "object" && v !== null && !Array.isArray(v);
}

function trimmed(v: unknown): string {
	return typeof v === "string" ? v.trim() : "";
}

function deepCopy<T>(v: T): T {
	return JSON.parse(JSON.stringify(v)) as T;
}

const QUESTION_TYPES: readonly string[] = ["single", "multi", "preview"];

// ---------------------------------------------------------------------------------------------
// §2.2 label derivation

/** Returns a deep copy of the raw params with derived option labels (§2.2). */
export function prepareParams(raw: unknown): unknown {
	if (!isObject(raw)) return raw;
	const params = deepCopy(raw);
	const questions = params.questions;
	if (!Array.isArray(questions)) return params;
	for (const q of questions) {
		if (!isObject(q) || !Array.isArray(q.options)) continue;
		for (const opt of q.options) {
			if (!isObject(opt)) continue;
			const label = opt.label;
			const labelMissing = label === undefined || (typeof label === "string" && label.trim() === "");
			if (!labelMissing || typeof opt.value !== "string") continue;
			const words = opt.value.replace(/[_-]+/g, " ").replace(/\s+/g, " ").trim();
			if (words === "") continue;
			opt.label = words.charAt(0).toUpperCase() + words.slice(1);
		}
	}
	return params;
}

// ---------------------------------------------------------------------------------------------
// §2.1 step 2: structural check (the schema Pi enforces before a tool runs)

/** Returns null when the prepared params are structurally valid, else a short description. */
export function checkStructure(params: unknown): string | null {
	if (!isObject(params)) return "params must be an object";
	if (params.title !== undefined && typeof params.title !== "string") return "title must be a string";
	if (params.background !== undefined && typeof params.background !== "boolean") return "background must be a boolean";
	if (!Array.isArray(params.questions)) return "questions must be an array";
	for (let i = 0; i < params.questions.length; i++) {
		const q: unknown = params.questions[i];
		const at = `questions[${i}]`;
		if (!isObject(q)) return `${at} must be an object`;
		if (typeof q.id !== "string") return `${at}.id must be a string`;
		if (q.label !== undefined && typeof q.label !== "string") return `${at}.label must be a string`;
		if (typeof q.prompt !== "string") return `${at}.prompt must be a string`;
		// An unknown type string is reported by the semantic check (Q1) with its own issue path.
		if (q.type !== undefined && typeof q.type !== "string") return `${at}.type must be a string`;
		if (q.required !== undefined && typeof q.required !== "boolean") return `${at}.required must be a boolean`;
		if (!Array.isArray(q.options)) return `${at}.options must be an array`;
		for (let j = 0; j < q.options.length; j++) {
			const o: unknown = q.options[j];
			const oat = `${at}.options[${j}]`;
			if (!isObject(o)) return `${oat} must be an object`;
			if (typeof o.value !== "string") return `${oat}.value must be a string`;
			if (typeof o.label !== "string") return `${oat}.label must be a string`;
			for (const k of ["description", "preview", "previewFile"]) {
				if (o[k] !== undefined && typeof o[k] !== "string") return `${oat}.${k} must be a string`;
			}
			if (o.recommended !== undefined && typeof o.recommended !== "boolean") return `${oat}.recommended must be a boolean`;
		}
	}
	return null;
}

// ---------------------------------------------------------------------------------------------
// §2.3 semantic validation (tolerant of non-string fields so it can run on unchecked input too)

export function validateSemantics(params: unknown): Issue[] {
	const issues: Issue[] = [];
	const questions: unknown[] = isObject(params) && Array.isArray(params.questions) ? params.questions : [];
	if (questions.length === 0) {
		return [{ path: "questions", message: "At least one question is required" }];
	}
	const seenIds = new Set<string>();
	questions.forEach((rawQ, i) => {
		const q: Record<string, unknown> = isObject(rawQ) ? rawQ : {};
		const n = i + 1;
		const at = `questions[${i}]`;
		if (q.type !== undefined && !(typeof q.type === "string" && QUESTION_TYPES.includes(q.type))) {
			issues.push({
				path: `${at}.type`,
				message: `Question ${n}: unsupported type ${JSON.stringify(q.type)}; use "single", "multi", or "preview"`,
			});
		}
		const id = trimmed(q.id);
		if (id === "") {
			issues.push({ path: `${at}.id`, message: `Question ${n}: an id is required` });
		} else if (seenIds.has(id)) {
			issues.push({ path: `${at}.id`, message: `Question ${n}: the id "${id}" is already used by an earlier question` });
		} else {
			seenIds.add(id);
		}
		if (trimmed(q.prompt) === "") {
			issues.push({ path: `${at}.prompt`, message: `Question ${n}: a prompt is required` });
		}
		const options: unknown[] = Array.isArray(q.options) ? q.options : [];
		if (options.length === 0) {
			issues.push({ path: `${at}.options`, message: `Question ${n}: give at least one option` });
		}
		const isPreview = q.type === "preview";
		const seenValues = new Set<string>();
		options.forEach((rawO, j) => {
			const o: Record<string, unknown> = isObject(rawO) ? rawO : {};
			const prefix = `Question ${n}, option ${j + 1}`;
			const oat = `${at}.options[${j}]`;
			const value = trimmed(o.value);
			if (value === "") {
				issues.push({ path: `${oat}.value`, message: `${prefix}: a value is required` });
			} else if (seenValues.has(value)) {
				issues.push({ path: `${oat}.value`, message: `${prefix}: the value "${value}" is already used in this question` });
			} else {
				seenValues.add(value);
			}
			if (trimmed(o.label) === "") {
				issues.push({ path: `${oat}.label`, message: `${prefix}: a label is required` });
			}
			const hasPreview = trimmed(o.preview) !== "";
			const hasPreviewFile = trimmed(o.previewFile) !== "";
			if (hasPreview && hasPreviewFile) {
				issues.push({ path: `${oat}.previewFile`, message: `${prefix}: give preview or previewFile, not both` });
			}
			if (isPreview && !hasPreview && !hasPreviewFile) {
				issues.push({
					path: `${oat}.preview`,
					message: `${prefix}: every option of a preview question needs preview text (or use type "single")`,
				});
			}
		});
	});
	return issues;
}

// ---------------------------------------------------------------------------------------------
// §2.4 normalization, §2.5 preview files

/** Loads a preview file; returns its text, or an error with the absolute path and a reason. */
export type PreviewFileLoader = (
	path: string,
) => { ok: true; text: string } | { ok: false; absolutePath: string; reason: string };

export interface FormOptions {
	presentSingleAsMulti?: boolean;
	/** Without a loader, any previewFile is reported as an issue. */
	loadPreviewFile?: PreviewFileLoader;
}

export type PrepareFormOutcome =
	| { ok: true; form: NormalizedForm }
	| { ok: false; kind: "schema"; message: string }
	| { ok: false; kind: "invalid_input"; issues: Issue[]; result: InvalidInputResult };

function invalidInput(raw: unknown, issues: Issue[]): PrepareFormOutcome {
	const result: InvalidInputResult = {
		cancelled: true,
		mode: "submit",
		questions: [],
		answers: {},
		error: { kind: "invalid_input", issues },
	};
	const title = isObject(raw) ? raw.title : undefined;
	const withTitle: InvalidInputResult = title === undefined ? result : { title, ...result };
	return { ok: false, kind: "invalid_input", issues, result: withTitle };
}

/** ask_user input -> normalized form (label preparation, structure, semantics, preview files, normalization). */
export function prepareForm(raw: unknown, opts: FormOptions = {}): PrepareFormOutcome {
	const prepared = prepareParams(raw);
	const structural = checkStructure(prepared);
	if (structural !== null) return { ok: false, kind: "schema", message: structural };
	const params = prepared as Record<string, unknown> & { questions: Record<string, unknown>[] };
	const issues = validateSemantics(params);
	if (issues.length > 0) return invalidInput(raw, issues);

	const loaded = new Map<string, string>(); // "i/j" -> file text
	params.questions.forEach((q, i) => {
		(q.options as Record<string, unknown>[]).forEach((o, j) => {
			const file = trimmed(o.previewFile);
			if (file === "") return;
			const at = `questions[${i}].options[${j}].previewFile`;
			if (!opts.loadPreviewFile) {
				issues.push({ path: at, message: `Cannot load preview file "${file}": preview files are not supported by this host` });
				return;
			}
			const r = opts.loadPreviewFile(file);
			if (r.ok) loaded.set(`${i}/${j}`, r.text);
			else issues.push({ path: at, message: `Cannot load preview file "${r.absolutePath}": ${r.reason}` });
		});
	});
	if (issues.length > 0) return invalidInput(raw, issues);

	const form: NormalizedForm = { questions: [] };
	const title = trimmed(params.title);
	if (title !== "") form.title = title;
	params.questions.forEach((q, i) => {
		const requested = (typeof q.type === "string" ? q.type : "single") as QuestionType;
		const label = trimmed(q.label);
		const asMulti = opts.presentSingleAsMulti === true && requested === "single";
		const question: AskQuestion = {
			id: trimmed(q.id),
			label: label === "" ? `Q${i + 1}` : label,
			prompt: trimmed(q.prompt),
			type: asMulti ? "multi" : requested,
			...(asMulti ? { requestedType: "single" as const, presentedType: "multi" as const } : {}),
			required: typeof q.required === "boolean" ? q.required : false,
			options: [],
		};
		(q.options as Record<string, unknown>[]).forEach((o, j) => {
			const option: AskOption = { value: trimmed(o.value), label: trimmed(o.label) };
			const description = trimmed(o.description);
			if (description !== "") option.description = description;
			const fileText = loaded.get(`${i}/${j}`);
			const preview = fileText !== undefined ? fileText.trim() : trimmed(o.preview);
			if (preview !== "") option.preview = preview;
			if (typeof o.recommended === "boolean") option.recommended = o.recommended;
			question.options.push(option);
		});
		form.questions.push(question);
	});
	return { ok: true, form };
}

// ---------------------------------------------------------------------------------------------
// §4 answer validation and §5 result building

interface Selection {
	value: string;
	label: string;
	index: number;
}

interface AcceptedAnswer {
	selections: Selection[];
	customText?: string;
	note?: string;
	optionNotes: Record<string, string>;
}

type AnswerCheck = { ok: true; answers: Record<string, AcceptedAnswer> } | { ok: false; message: string };

function checkAnswers(questions: AskQuestion[], response: Record<string, unknown>): AnswerCheck {
	const answers = response.answers;
	if (!isObject(answers)) return { ok: false, message: "The answer response needs an answers object." };
	const mode = response.mode;
	if (mode !== undefined && mode !== "submit" && mode !== "elaborate") {
		return { ok: false, message: 'The answer mode must be "submit" or "elaborate".' };
	}
	const accepted: Record<string, AcceptedAnswer> = {};
	for (const key of Object.keys(answers)) {
		const question = questions.find((q) => q.id === key);
		if (!question) return { ok: false, message: `No question has the id "${key}".` };
		const entry = answers[key];
		const q = key;
		if (!isObject(entry)) return { ok: false, message: `The answer for question "${q}" must be an object.` };
		const rawValues = entry.values;
		if (rawValues !== undefined && !(Array.isArray(rawValues) && rawValues.every((v) => typeof v === "string"))) {
			return { ok: false, message: `The values for question "${q}" must be an array of strings.` };
		}
		const values: string[] = rawValues === undefined ? [] : (rawValues as string[]);
		if (new Set(values).size !== values.length) {
			return { ok: false, message: `The values for question "${q}" contain a duplicate.` };
		}
		const multi = question.type === "multi";
		if (!multi && values.length > 1) {
			return { ok: false, message: `Question "${q}" takes at most one value.` };
		}
		const customText = entry.customText;
		if (customText !== undefined && typeof customText !== "string") {
			return { ok: false, message: `The custom text for question "${q}" must be a string.` };
		}
		const hasCustom = typeof customText === "string" && customText.trim() !== "";
		if (hasCustom && !multi && values.length > 0) {
			return { ok: false, message: `Question "${q}" takes either a value or custom text, not both.` };
		}
		const note = entry.note;
		if (note !== undefined && typeof note !== "string") {
			return { ok: false, message: `The note for question "${q}" must be a string.` };
		}
		const optionNotes = entry.optionNotes;
		if (optionNotes !== undefined && !(isObject(optionNotes) && Object.values(optionNotes).every((v) => typeof v === "string"))) {
			return { ok: false, message: `The option notes for question "${q}" must map option values to strings.` };
		}
		const selections: Selection[] = [];
		for (const v of values) {
			const index = question.options.findIndex((o) => o.value === v);
			if (index < 0) return { ok: false, message: `Question "${q}" has no option with the value "${v}".` };
			selections.push({ value: v, label: question.options[index].label, index: index + 1 });
		}
		const keptNotes: Record<string, string> = {};
		if (optionNotes !== undefined) {
			for (const [k, n] of Object.entries(optionNotes as Record<string, string>)) {
				if (n.trim() === "") continue;
				if (!question.options.some((o) => o.value === k)) {
					return { ok: false, message: `Question "${q}" has no option with the value "${k}" for an option note.` };
				}
				keptNotes[k] = n;
			}
		}
		const answer: AcceptedAnswer = { selections, optionNotes: keptNotes };
		if (hasCustom) answer.customText = customText as string;
		if (typeof note === "string" && note.trim() !== "") answer.note = note;
		accepted[key] = answer;
	}
	return { ok: true, answers: accepted };
}

function serializeAnswer(a: AcceptedAnswer): AskResultAnswer {
	const out: AskResultAnswer = {
		values: a.selections.map((s) => s.value),
		labels: a.selections.map((s) => s.label),
		indices: a.selections.map((s) => s.index),
	};
	if (a.customText !== undefined) {
		out.values.push(a.customText);
		out.labels.push(a.customText);
		out.customText = a.customText;
	}
	if (a.note !== undefined) out.note = a.note;
	const notes: Record<string, string> = {};
	let any = false;
	for (const s of a.selections) {
		const n = a.optionNotes[s.value];
		if (typeof n === "string" && n !== "") {
			notes[s.value] = n;
			any = true;
		}
	}
	if (any) out.optionNotes = notes;
	return out;
}

function isEmptyAnswer(r: AskResultAnswer): boolean {
	return (
		r.values.length === 0 &&
		r.labels.length === 0 &&
		r.indices.length === 0 &&
		r.customText === undefined &&
		r.note === undefined &&
		r.optionNotes === undefined
	);
}

function isCommitted(r: AskResultAnswer): boolean {
	return r.values.length > 0 || r.labels.length > 0 || r.indices.length > 0 || r.customText !== undefined;
}

function summarize(q: AskQuestion): AskQuestionSummary {
	const requested = q.requestedType ?? q.type;
	const s: AskQuestionSummary = { id: q.id, label: q.label, prompt: q.prompt, type: requested };
	if (q.presentedType !== undefined && q.presentedType !== requested) s.presentedType = q.presentedType;
	return s;
}

function contextOption(o: AskOption): ContextOption {
	const c: ContextOption = { value: o.value, label: o.label };
	if (o.description !== undefined && o.description !== "") c.description = o.description;
	if (o.preview !== undefined && o.preview !== "") c.preview = o.preview;
	if (o.recommended !== undefined) c.recommended = o.recommended;
	return c;
}

function questionContext(q: AskQuestion): ElaborationQuestionContext {
	return { ...summarize(q), options: q.options.map(contextOption) };
}

export function buildResult(
	form: NormalizedForm,
	accepted: Record<string, AcceptedAnswer>,
	mode: "submit" | "elaborate",
	cancelled: boolean,
): AskResult {
	const result: AskResult = { cancelled, mode, questions: form.questions.map(summarize), answers: {} };
	const withTitle: AskResult = form.title !== undefined ? { title: form.title, ...result } : result;
	for (const key of Object.keys(accepted)) {
		const r = serializeAnswer(accepted[key]);
		if (mode === "submit" ? !isEmptyAnswer(r) : isCommitted(r)) withTitle.answers[key] = r;
	}
	if (mode !== "elaborate") return withTitle;

	const hasNotes = (a: AcceptedAnswer | undefined): boolean =>
		a !== undefined && (a.note !== undefined || Object.keys(a.optionNotes).length > 0);
	const continuation: AskContinuationPayload = {
		affectedQuestionIds: [],
		preservedAnswers: {},
		questionStates: {},
		strategy: "refine_only",
	};
	for (const q of form.questions) {
		const a = Object.prototype.hasOwnProperty.call(accepted, q.id) ? accepted[q.id] : undefined;
		const r = Object.prototype.hasOwnProperty.call(withTitle.answers, q.id) ? withTitle.answers[q.id] : undefined;
		if (hasNotes(a)) {
			continuation.affectedQuestionIds.push(q.id);
			continuation.questionStates[q.id] = { status: "needs_clarification" };
		} else if (r !== undefined) {
			continuation.preservedAnswers[q.id] = deepCopy(r);
			continuation.questionStates[q.id] = { status: "answered" };
		} else {
			continuation.questionStates[q.id] = { status: "unanswered" };
		}
	}
	withTitle.continuation = continuation;
	if (cancelled) return withTitle;

	const items: ElaborationItem[] = [];
	for (const q of form.questions) {
		const a = Object.prototype.hasOwnProperty.call(accepted, q.id) ? accepted[q.id] : undefined;
		if (a === undefined || !hasNotes(a)) continue;
		const answered = a.selections.length > 0 || a.customText !== undefined;
		const serialized = serializeAnswer(a);
		if (a.note !== undefined) {
			const item: ElaborationItem = { target: { kind: "question" }, question: questionContext(q), answered, note: a.note };
			items.push(answered ? { target: item.target, question: item.question, answered, answer: deepCopy(serialized), note: a.note } : item);
		}
		for (const [value, note] of Object.entries(a.optionNotes)) {
			const option = q.options.find((o) => o.value === value);
			if (option === undefined || note === "") continue;
			const base = {
				target: { kind: "option" as const, optionValue: value },
				question: questionContext(q),
				option: contextOption(option),
				selected: a.selections.some((s) => s.value === value),
				answered,
			};
			items.push(answered ? { ...base, answer: deepCopy(serialized), note } : { ...base, note });
		}
	}
	withTitle.elaboration = { instruction: ELABORATION_INSTRUCTION, nextAction: "clarify_then_reask", items };
	return withTitle;
}

// ---------------------------------------------------------------------------------------------
// §3 runtime

export interface StartFlowOptions {
	form: NormalizedForm;
	toolCallId?: string;
	source?: FlowSource;
	/** Called once when the flow completes (not on dispose). */
	onComplete?: (result: AskResult) => void;
	/** Called once when the flow is disposed without completion. */
	onDispose?: () => void;
}

export interface FlowHandle {
	readonly flowId: string;
	readonly toolCallId?: string;
	/** Completes the flow locally (as the host's own UI would); returns false if it was no longer active. */
	complete(result: AskResult): boolean;
	/** Cancels the flow locally (emits completed with a cancelled result). */
	cancel(): boolean;
	/** Ends the flow without a completed event. */
	dispose(): void;
	isActive(): boolean;
}

interface Flow {
	flowId: string;
	toolCallId?: string;
	source: FlowSource;
	form: NormalizedForm;
	done: boolean; // completed or disposed
	onComplete?: (result: AskResult) => void;
	onDispose?: () => void;
}

export function makeFlowId(toolCallId: string | undefined): string {
	if (typeof toolCallId === "string" && toolCallId !== "") return `tool:${toolCallId}`;
	return `flow:${Date.now()}:${Math.random().toString(36).slice(2)}`;
}

type SubmitError = "flow_not_found" | "invalid_request" | "invalid_answer";

export class Runtime {
	private readonly bus: Bus;
	private readonly active = new Map<string, Flow>();
	private readonly handles = new Set<Flow>();
	private unsubscribe: (() => void) | undefined;

	constructor(bus: Bus) {
		this.bus = bus;
		this.unsubscribe = bus.on(CH_SUBMIT, (data) => this.handleSubmit(data));
	}

	get disposed(): boolean {
		return this.unsubscribe === undefined;
	}

	activeFlowIds(): string[] {
		return [...this.active.keys()];
	}

	startFlow(opts: StartFlowOptions): FlowHandle {
		const flow: Flow = {
			flowId: makeFlowId(opts.toolCallId),
			source: opts.source ?? "tool",
			form: deepCopy(opts.form),
			done: false,
		};
		if (typeof opts.toolCallId === "string" && opts.toolCallId !== "") flow.toolCallId = opts.toolCallId;
		if (opts.onComplete) flow.onComplete = opts.onComplete;
		if (opts.onDispose) flow.onDispose = opts.onDispose;
		if (this.disposed) {
			flow.done = true;
		} else {
			this.active.set(flow.flowId, flow);
			this.handles.add(flow);
			queueMicrotask(() => {
				if (flow.done || this.disposed) return;
				const started: Record<string, unknown> = { version: 1, flowId: flow.flowId };
				if (flow.toolCallId !== undefined) started.toolCallId = flow.toolCallId;
				started.source = flow.source;
				if (flow.form.title !== undefined) started.title = flow.form.title;
				started.questions = deepCopy(flow.form.questions);
				started.createdAt = Date.now();
				this.bus.emit(CH_STARTED, started);
			});
		}
		const handle: FlowHandle = {
			flowId: flow.flowId,
			complete: (result) => this.completeFlow(flow, result),
			cancel: () => this.completeFlow(flow, buildResult(flow.form, {}, "submit", true)),
			dispose: () => this.disposeFlow(flow),
			isActive: () => !flow.done,
		};
		if (flow.toolCallId !== undefined) (handle as { toolCallId?: string }).toolCallId = flow.toolCallId;
		return handle;
	}

	/** Session shutdown: forget every flow (no completed) and stop answering submits. */
	disposeAll(): void {
		const unsub = this.unsubscribe;
		this.unsubscribe = undefined;
		if (unsub) unsub();
		const flows = [...this.handles];
		this.handles.clear();
		this.active.clear();
		for (const f of flows) {
			if (f.done) continue;
			f.done = true;
			try {
				f.onDispose?.();
			} catch {
				// a dispose callback must not break shutdown
			}
		}
	}

	private completeFlow(flow: Flow, result: AskResult): boolean {
		if (flow.done) return false;
		flow.done = true;
		this.active.delete(flow.flowId);
		this.handles.delete(flow);
		const completed: Record<string, unknown> = { version: 1, flowId: flow.flowId };
		if (flow.toolCallId !== undefined) completed.toolCallId = flow.toolCallId;
		completed.source = flow.source;
		completed.result = deepCopy(result);
		completed.completedAt = Date.now();
		if (!this.disposed) this.bus.emit(CH_COMPLETED, completed);
		flow.onComplete?.(deepCopy(result));
		return true;
	}

	private disposeFlow(flow: Flow): void {
		if (flow.done) return;
		flow.done = true;
		// Like the reference: the entry for this flowId goes, even if a later flow re-used the id (L5).
		this.active.delete(flow.flowId);
		this.handles.delete(flow);
		flow.onDispose?.();
	}

	private ack(requestId: string, flowId: string, error?: SubmitError, message?: string): void {
		if (this.disposed) return;
		const data: Record<string, unknown> = { version: 1, requestId, flowId, ok: error === undefined };
		if (error !== undefined) {
			data.error = error;
			data.message = message ?? error;
		}
		this.bus.emit(CH_SUBMIT_RESULT, data);
	}

	private handleSubmit(payload: unknown): void {
		if (this.disposed) return;
		if (!isObject(payload)) {
			this.ack("", "", "invalid_request", "The submit payload must be a JSON object.");
			return;
		}
		const requestId = typeof payload.requestId === "string" ? payload.requestId : "";
		const flowId = typeof payload.flowId === "string" ? payload.flowId : "";
		const bad = (m: string) => this.ack(requestId, flowId, "invalid_request", m);
		if (payload.version !== 1) return bad("The submit payload needs version 1.");
		if (requestId === "") return bad("The submit payload needs a non-empty string requestId.");
		if (flowId === "") return bad("The submit payload needs a non-empty string flowId.");
		const response = payload.response;
		if (!isObject(response)) return bad("The submit response must be an object.");
		if (response.kind !== "answer" && response.kind !== "cancel") {
			return bad('The submit response kind must be "answer" or "cancel".');
		}
		const flow = this.active.get(flowId);
		if (flow === undefined || flow.done) {
			this.ack(requestId, flowId, "flow_not_found", "No ask flow with this flowId is active.");
			return;
		}
		if (response.kind === "cancel") {
			this.completeFlow(flow, buildResult(flow.form, {}, "submit", true));
			this.ack(requestId, flowId);
			return;
		}
		const checked = checkAnswers(flow.form.questions, response);
		if (!checked.ok) {
			this.ack(requestId, flowId, "invalid_answer", checked.message);
			return;
		}
		const mode = response.mode === "elaborate" ? "elaborate" : "submit";
		this.completeFlow(flow, buildResult(flow.form, checked.answers, mode, false));
		this.ack(requestId, flowId);
	}
}
