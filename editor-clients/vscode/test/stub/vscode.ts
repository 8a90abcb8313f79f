// test/stub/vscode.ts: the part of VS Code's `vscode` module that the
// extension and vscode-languageclient use, as an in-memory editor: text
// documents with versions and an undo history, editors with selections and
// decorations, WorkspaceEdits applied the way VS Code applies them (one
// version step and one undo step per applyEdit), diagnostics collections,
// commands, CodeLens providers, output channels, webviews, progress and
// messages recorded for the tests to read. The server, the language client
// and the extension are real; only the editor around them is this file.
/* eslint-disable @typescript-eslint/no-explicit-any */
import * as path from 'path';

export const version = '1.91.0';

// --- basic types ------------------------------------------------------------

export class Disposable {
  constructor(private readonly fn: () => void = () => undefined) {}
  static from(...ds: { dispose(): any }[]): Disposable {
    return new Disposable(() => ds.forEach((d) => d.dispose()));
  }
  dispose(): void {
    this.fn();
  }
}

export class EventEmitter<T> {
  private listeners: ((e: T) => any)[] = [];
  event = (listener: (e: T) => any, thisArg?: any, disposables?: Disposable[]): Disposable => {
    const fn = thisArg ? listener.bind(thisArg) : listener;
    this.listeners.push(fn);
    const d = new Disposable(() => { this.listeners = this.listeners.filter((l) => l !== fn); });
    disposables?.push(d);
    return d;
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) {
      l(e);
    }
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class CancellationError extends Error {
  constructor() {
    super('Canceled');
    this.name = 'Canceled';
  }
}

export class CancellationTokenSource {
  private emitter = new EventEmitter<void>();
  token = {
    isCancellationRequested: false,
    onCancellationRequested: this.emitter.event,
  };
  cancel(): void {
    if (!this.token.isCancellationRequested) {
      this.token.isCancellationRequested = true;
      this.emitter.fire();
    }
  }
  dispose(): void {
    this.emitter.dispose();
  }
}

export class Position {
  constructor(readonly line: number, readonly character: number) {}
  isBefore(o: Position): boolean { return this.compareTo(o) < 0; }
  isBeforeOrEqual(o: Position): boolean { return this.compareTo(o) <= 0; }
  isAfter(o: Position): boolean { return this.compareTo(o) > 0; }
  isAfterOrEqual(o: Position): boolean { return this.compareTo(o) >= 0; }
  isEqual(o: Position): boolean { return this.compareTo(o) === 0; }
  compareTo(o: Position): number { return this.line - o.line || this.character - o.character; }
  translate(dl = 0, dc = 0): Position { return new Position(this.line + dl, this.character + dc); }
  with(line = this.line, character = this.character): Position { return new Position(line, character); }
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(a: any, b: any, c?: number, d?: number) {
    const s = typeof a === 'number' ? new Position(a, b) : a;
    const e = typeof a === 'number' ? new Position(c!, d!) : b;
    [this.start, this.end] = s.isAfter(e) ? [e, s] : [s, e];
  }
  get isEmpty(): boolean { return this.start.isEqual(this.end); }
  get isSingleLine(): boolean { return this.start.line === this.end.line; }
  contains(p: Position | Range): boolean {
    if (p instanceof Range) {
      return this.contains(p.start) && this.contains(p.end);
    }
    return p.isAfterOrEqual(this.start) && p.isBeforeOrEqual(this.end);
  }
}

export class Selection extends Range {
  constructor(readonly anchor: Position, readonly active: Position) {
    super(anchor, active);
  }
  get isReversed(): boolean { return this.anchor.isAfter(this.active); }
}

export class Uri {
  private constructor(readonly scheme: string, readonly authority: string, readonly path: string,
    readonly query: string, readonly fragment: string) {}
  static parse(s: string): Uri {
    const m = /^([a-zA-Z][\w+.-]*):(\/\/([^/?#]*))?([^?#]*)(\?([^#]*))?(#(.*))?$/.exec(s);
    if (!m) {
      return new Uri('file', '', s, '', '');
    }
    return new Uri(m[1], m[3] ?? '', decodeURIComponent(m[4] ?? ''), m[6] ? decodeURIComponent(m[6]) : '',
      m[8] ?? '');
  }
  static file(p: string): Uri { return new Uri('file', '', path.resolve(p), '', ''); }
  static from(c: { scheme: string; authority?: string; path?: string; query?: string; fragment?: string }): Uri {
    return new Uri(c.scheme, c.authority ?? '', c.path ?? '', c.query ?? '', c.fragment ?? '');
  }
  static joinPath(u: Uri, ...parts: string[]): Uri { return u.with({ path: path.posix.join(u.path, ...parts) }); }
  get fsPath(): string { return this.path; }
  with(c: { scheme?: string; path?: string; query?: string }): Uri {
    return new Uri(c.scheme ?? this.scheme, this.authority, c.path ?? this.path, c.query ?? this.query, this.fragment);
  }
  toString(): string {
    const enc = (p: string) => p.split('/').map(encodeURIComponent).join('/');
    let s = `${this.scheme}:`;
    if (this.authority || this.scheme === 'file') {
      s += `//${this.authority}`;
    }
    s += enc(this.path);
    if (this.query) {
      s += `?${encodeURIComponent(this.query)}`;
    }
    return s;
  }
  toJSON(): any { return this.toString(); }
}

export enum DiagnosticSeverity { Error = 0, Warning = 1, Information = 2, Hint = 3 }
export enum EndOfLine { LF = 1, CRLF = 2 }
export enum ViewColumn { Active = -1, Beside = -2, One = 1, Two = 2 }
export enum StatusBarAlignment { Left = 1, Right = 2 }
export enum ProgressLocation { SourceControl = 1, Window = 10, Notification = 15 }
export enum LogLevel { Off = 0, Trace = 1, Debug = 2, Info = 3, Warning = 4, Error = 5 }
export enum ConfigurationTarget { Global = 1, Workspace = 2, WorkspaceFolder = 3 }
export enum TextDocumentSaveReason { Manual = 1, AfterDelay = 2, FocusOut = 3 }
export enum OverviewRulerLane { Left = 1, Center = 2, Right = 4, Full = 7 }
export enum UIKind { Desktop = 1, Web = 2 }

export class Diagnostic {
  source?: string;
  code?: any;
  tags?: any[];
  relatedInformation?: any[];
  constructor(public range: Range, public message: string, public severity: DiagnosticSeverity = DiagnosticSeverity.Error) {}
}

export class CodeLens {
  constructor(public range: Range, public command?: { title: string; command: string; arguments?: any[] }) {}
  get isResolved(): boolean { return !!this.command; }
}

export class ThemeColor { constructor(readonly id: string) {} }
export class ThemeIcon { constructor(readonly id: string) {} }

export class MarkdownString {
  value = '';
  constructor(v = '') { this.value = v; }
  appendMarkdown(s: string): this { this.value += s; return this; }
  appendText(s: string): this { this.value += s; return this; }
  appendCodeblock(s: string, lang = ''): this { this.value += `\n\`\`\`${lang}\n${s}\n\`\`\`\n`; return this; }
}

export class TextEdit {
  constructor(public range: Range, public newText: string) {}
  static replace(r: Range, t: string): TextEdit { return new TextEdit(r, t); }
  static insert(p: Position, t: string): TextEdit { return new TextEdit(new Range(p, p), t); }
  static delete(r: Range): TextEdit { return new TextEdit(r, ''); }
}

export class WorkspaceEdit {
  readonly edits: { kind: 'text' | 'create' | 'delete'; uri: Uri; edit?: TextEdit; meta?: any }[] = [];
  replace(uri: Uri, range: Range, text: string, meta?: any): void { this.edits.push({ kind: 'text', uri, edit: new TextEdit(range, text), meta }); }
  insert(uri: Uri, pos: Position, text: string, meta?: any): void { this.replace(uri, new Range(pos, pos), text, meta); }
  delete(uri: Uri, range: Range, meta?: any): void { this.replace(uri, range, '', meta); }
  createFile(uri: Uri, _o?: any, meta?: any): void { this.edits.push({ kind: 'create', uri, meta }); }
  deleteFile(uri: Uri, _o?: any, meta?: any): void { this.edits.push({ kind: 'delete', uri, meta }); }
  get size(): number { return this.edits.length; }
  entries(): [Uri, TextEdit[]][] {
    const m = new Map<string, [Uri, TextEdit[]]>();
    for (const e of this.edits) {
      if (e.edit) {
        const k = e.uri.toString();
        if (!m.has(k)) {
          m.set(k, [e.uri, []]);
        }
        m.get(k)![1].push(e.edit);
      }
    }
    return [...m.values()];
  }
}

export class TabInputText { constructor(readonly uri: Uri) {} }
export class TabInputTextDiff { constructor(readonly original: Uri, readonly modified: Uri) {} }
export class TabInputNotebook { constructor(readonly uri: Uri) {} }
export class TabInputCustom { constructor(readonly uri: Uri) {} }

// --- documents and editors ----------------------------------------------------

export class TextDocument {
  version = 1;
  isClosed = false;
  isDirty = false;
  eol = EndOfLine.LF;
  /** Texts before each applied edit, for undo(). */
  readonly undoStack: string[] = [];
  constructor(readonly uri: Uri, public languageId: string, public text: string) {}
  get fileName(): string { return this.uri.fsPath; }
  get isUntitled(): boolean { return this.uri.scheme === 'untitled'; }
  private lines(): string[] { return this.text.split('\n'); }
  get lineCount(): number { return this.lines().length; }
  getText(r?: Range): string {
    if (!r) {
      return this.text;
    }
    return this.text.slice(this.offsetAt(r.start), this.offsetAt(r.end));
  }
  lineAt(x: number | Position): any {
    const n = typeof x === 'number' ? x : x.line;
    const lines = this.lines();
    if (n < 0 || n >= lines.length) {
      throw new Error(`Illegal value for line: ${n}`);
    }
    const t = lines[n];
    return {
      lineNumber: n, text: t, range: new Range(n, 0, n, t.length),
      rangeIncludingLineBreak: n + 1 < lines.length ? new Range(n, 0, n + 1, 0) : new Range(n, 0, n, t.length),
      isEmptyOrWhitespace: t.trim() === '', firstNonWhitespaceCharacterIndex: t.length - t.trimStart().length,
    };
  }
  offsetAt(p: Position): number {
    const lines = this.lines();
    const line = Math.max(0, Math.min(p.line, lines.length - 1));
    let off = 0;
    for (let i = 0; i < line; i++) {
      off += lines[i].length + 1;
    }
    if (p.line > lines.length - 1) {
      return this.text.length;
    }
    return off + Math.max(0, Math.min(p.character, lines[line].length));
  }
  positionAt(off: number): Position {
    const before = this.text.slice(0, Math.max(0, Math.min(off, this.text.length))).split('\n');
    return new Position(before.length - 1, before[before.length - 1].length);
  }
  validateRange(r: Range): Range { return new Range(this.positionAt(this.offsetAt(r.start)), this.positionAt(this.offsetAt(r.end))); }
  validatePosition(p: Position): Position { return this.positionAt(this.offsetAt(p)); }
  getWordRangeAtPosition(): Range | undefined { return undefined; }
  async save(reason: TextDocumentSaveReason = TextDocumentSaveReason.Manual): Promise<boolean> {
    // onWillSaveTextDocument's waitUntil edits are applied before the save.
    const waits: Promise<any>[] = [];
    workspaceEvents.willSave.fire({ document: this, reason, waitUntil: (p: Promise<any>) => waits.push(p) });
    for (const p of waits) {
      const edits = await p;
      if (Array.isArray(edits) && edits.length > 0) {
        const we = new WorkspaceEdit();
        for (const e of edits) {
          we.replace(this.uri, e.range, e.newText);
        }
        applyNow(we);
      }
    }
    this.isDirty = false;
    workspaceEvents.save.fire(this);
    return true;
  }
}

export class TextEditor {
  selection: Selection = new Selection(new Position(0, 0), new Position(0, 0));
  /** Decorations by type key: the options last set. */
  readonly decorations = new Map<string, any[]>();
  viewColumn = ViewColumn.One;
  constructor(readonly document: TextDocument) {}
  get selections(): Selection[] { return [this.selection]; }
  setDecorations(type: { key: string }, opts: any[]): void { this.decorations.set(type.key, opts); }
  async edit(cb: (b: any) => void): Promise<boolean> {
    const we = new WorkspaceEdit();
    cb({
      replace: (r: Range, t: string) => we.replace(this.document.uri, r, t),
      insert: (p: Position, t: string) => we.insert(this.document.uri, p, t),
      delete: (r: Range) => we.delete(this.document.uri, r),
    });
    return workspace.applyEdit(we);
  }
  revealRange(): void { /* nothing to scroll */ }
}

// --- recorded state, for the tests -----------------------------------------

export const recorded = {
  messages: [] as { level: 'info' | 'warn' | 'error'; text: string; items: string[]; modal?: boolean; detail?: string }[],
  statusMessages: [] as string[],
  progress: [] as { title?: string; message?: string }[],
  executed: [] as { command: string; args: any[] }[],
  context: new Map<string, any>(),
  channels: new Map<string, any>(),
  webviews: [] as any[],
  shown: [] as { uri: string; options: any }[],
  progressSources: [] as CancellationTokenSource[],
  applied: [] as WorkspaceEdit[],
  picks: [] as { items: any[]; options: any }[],
  /** Tree views made (createTreeView), by id: { provider, view }. */
  trees: new Map<string, { provider: any; view: any }>(),
};

// Answers for the next showInputBox / message calls (FIFO); a message
// answer is an item title or undefined.
// A showQuickPick answer is a function of the items offered.
export const answers = {
  input: [] as (string | undefined)[],
  message: [] as (string | undefined)[],
  pick: [] as ((items: any[]) => any)[],
};

let settings: Record<string, any> = {};
let folders: { uri: Uri; name: string; index: number }[] | undefined;
let secretsStore = new Map<string, string>();
const documents: TextDocument[] = [];
const editors: TextEditor[] = [];
let active: TextEditor | undefined;
const providers = new Map<string, any>();
const codeLensProviders: any[] = [];
const codeActionProviders: any[] = [];
const commandTable = new Map<string, (...args: any[]) => any>();
const collections: DiagnosticCollection[] = [];

const workspaceEvents = {
  change: new EventEmitter<any>(),
  open: new EventEmitter<TextDocument>(),
  close: new EventEmitter<TextDocument>(),
  save: new EventEmitter<TextDocument>(),
  willSave: new EventEmitter<any>(),
  config: new EventEmitter<any>(),
};
const windowEvents = {
  visible: new EventEmitter<TextEditor[]>(),
  active: new EventEmitter<TextEditor | undefined>(),
};

/** Back to an empty editor with these settings (flat "kiln.x.y" keys). */
export function reset(newSettings: Record<string, any> = {}): void {
  settings = { ...newSettings };
  secretsStore = new Map();
  documents.length = 0;
  editors.length = 0;
  active = undefined;
  providers.clear();
  codeLensProviders.length = 0;
  commandTable.clear();
  collections.length = 0;
  for (const k of Object.keys(recorded) as (keyof typeof recorded)[]) {
    const v: any = recorded[k];
    if (Array.isArray(v)) {
      v.length = 0;
    } else {
      v.clear();
    }
  }
  answers.input.length = 0;
  answers.message.length = 0;
  answers.pick.length = 0;
  folders = undefined;
  window.tabGroups.all[0].tabs = [];
}

/** Open this folder as the window's workspace (before activate()). */
export function setWorkspaceFolder(dir: string): void {
  folders = [{ uri: Uri.file(dir), name: path.basename(dir), index: 0 }];
}

export function setSetting(key: string, value: any): void {
  settings[key] = value;
}

/** Open a document and make its editor the active one. */
export function openEditor(file: string, languageId: string, text: string): TextEditor {
  const doc = new TextDocument(Uri.file(file), languageId, text);
  documents.push(doc);
  workspaceEvents.open.fire(doc);
  const ed = new TextEditor(doc);
  editors.push(ed);
  active = ed;
  addTab(doc.uri);
  windowEvents.visible.fire([...editors]);
  windowEvents.active.fire(ed);
  return ed;
}

function addTab(uri: Uri): void {
  const g = window.tabGroups.all[0];
  if (!g.tabs.some((t: any) => t.input.uri?.toString() === uri.toString())) {
    g.tabs.push({ label: uri.path.split('/').pop(), input: new TabInputText(uri) });
  }
}

/** The URIs of the open tabs (both sides of a diff tab). */
export function openTabs(): string[] {
  return window.tabGroups.all.flatMap((g: any) => g.tabs).flatMap((t: any) =>
    (t.input instanceof TabInputTextDiff ? [t.input.original, t.input.modified] : [t.input.uri]).map((u: Uri) => u.toString()));
}

/** A change typed by the user: one version step, one undo step. */
export function type(doc: TextDocument, range: Range, text: string): void {
  const we = new WorkspaceEdit();
  we.replace(doc.uri, range, text);
  applyNow(we);
}

/** Undo the last edit of doc (VS Code's undo moves the version on too). */
export function undo(doc: TextDocument): boolean {
  const prev = doc.undoStack.pop();
  if (prev === undefined) {
    return false;
  }
  // The change as VS Code reports an undo: the span that differs.
  const cur = doc.text;
  let a = 0;
  while (a < cur.length && a < prev.length && cur[a] === prev[a]) {
    a++;
  }
  let b = 0;
  while (b < cur.length - a && b < prev.length - a && cur[cur.length - 1 - b] === prev[prev.length - 1 - b]) {
    b++;
  }
  // Whole lines, as an undo of line edits is reported.
  while (a > 0 && cur[a - 1] !== '\n') {
    a--;
  }
  while (b > 0 && cur[cur.length - b - 1] !== '\n') {
    b--;
  }
  const range = new Range(doc.positionAt(a), doc.positionAt(cur.length - b));
  setText(doc, prev, [{ range, text: prev.slice(a, prev.length - b), rangeOffset: a, rangeLength: cur.length - b - a }]);
  return true;
}

export function closeDocument(doc: TextDocument): void {
  const i = documents.indexOf(doc);
  if (i >= 0) {
    documents.splice(i, 1);
  }
  doc.isClosed = true;
  for (let j = editors.length - 1; j >= 0; j--) {
    if (editors[j].document === doc) {
      editors.splice(j, 1);
    }
  }
  if (active?.document === doc) {
    active = editors[editors.length - 1];
  }
  workspaceEvents.close.fire(doc);
}

export async function codeLenses(doc: TextDocument): Promise<CodeLens[]> {
  const out: CodeLens[] = [];
  for (const p of codeLensProviders) {
    out.push(...((await p.provideCodeLenses(doc, new CancellationTokenSource().token)) ?? []));
  }
  return out;
}

export function diagnosticsOf(name: string, uri: Uri): Diagnostic[] {
  const c = collections.find((x) => x.name === name);
  return c ? c.get(uri) ?? [] : [];
}

export function contentOf(uri: Uri): string | undefined {
  const p = providers.get(uri.scheme);
  return p ? p.provideTextDocumentContent(uri) : undefined;
}

function setText(doc: TextDocument, text: string, changes: any[]): void {
  doc.text = text;
  doc.version++;
  doc.isDirty = true;
  workspaceEvents.change.fire({ document: doc, contentChanges: changes.length ? changes : [{ text }], reason: undefined });
}

function applyNow(we: WorkspaceEdit): boolean {
  recorded.applied.push(we);
  const byDoc = new Map<TextDocument, TextEdit[]>();
  for (const e of we.edits) {
    if (e.kind === 'create') {
      // A new file: an empty document to take the edits that follow.
      if (!documents.some((d) => d.uri.toString() === e.uri.toString())) {
        documents.push(new TextDocument(e.uri, 'plaintext', ''));
      }
      continue;
    }
    if (e.kind !== 'text') {
      continue;
    }
    const doc = documents.find((d) => d.uri.toString() === e.uri.toString());
    if (!doc) {
      return false;
    }
    if (!byDoc.has(doc)) {
      byDoc.set(doc, []);
    }
    byDoc.get(doc)!.push(e.edit!);
  }
  for (const [doc, edits] of byDoc) {
    const spans = edits.map((e) => ({ s: doc.offsetAt(e.range.start), e: doc.offsetAt(e.range.end), t: e.newText, r: e.range }));
    spans.sort((a, b) => b.s - a.s);
    for (let i = 1; i < spans.length; i++) {
      if (spans[i].e > spans[i - 1].s) {
        throw new Error('Overlapping ranges are not allowed!');
      }
    }
    let text = doc.text;
    for (const sp of spans) {
      text = text.slice(0, sp.s) + sp.t + text.slice(sp.e);
    }
    doc.undoStack.push(doc.text);
    setText(doc, text, spans.map((sp) => ({ range: sp.r, text: sp.t, rangeOffset: sp.s, rangeLength: sp.e - sp.s })));
  }
  return true;
}

// --- diagnostics --------------------------------------------------------------

export class DiagnosticCollection {
  private readonly map = new Map<string, Diagnostic[]>();
  constructor(readonly name: string) {}
  set(uri: Uri, d: Diagnostic[] | undefined): void { this.map.set(uri.toString(), d ?? []); }
  get(uri: Uri): Diagnostic[] | undefined { return this.map.get(uri.toString()); }
  has(uri: Uri): boolean { return this.map.has(uri.toString()); }
  delete(uri: Uri): void { this.map.delete(uri.toString()); }
  clear(): void { this.map.clear(); }
  forEach(cb: (u: Uri, d: Diagnostic[]) => void): void { this.map.forEach((d, u) => cb(Uri.parse(u), d)); }
  dispose(): void { this.map.clear(); }
}

// --- namespaces ----------------------------------------------------------------

function outputChannel(name: string, opts?: any): any {
  const ch: any = {
    name, text: '', shown: 0, logLevel: LogLevel.Info,
    onDidChangeLogLevel: new EventEmitter<LogLevel>().event,
    append(s: string) { ch.text += s; },
    appendLine(s: string) { ch.text += s + '\n'; },
    replace(s: string) { ch.text = s; },
    clear() { ch.text = ''; },
    show() { ch.shown++; },
    hide() { /* */ },
    dispose() { /* */ },
  };
  if (opts && opts.log) {
    for (const l of ['trace', 'debug', 'info', 'warn', 'error']) {
      ch[l] = (m: any, ...rest: any[]) => { ch.text += `[${l}] ${m instanceof Error ? m.message : String(m)}${rest.length ? ' ' + rest.map(String).join(' ') : ''}\n`; };
    }
  }
  recorded.channels.set(name, ch);
  return ch;
}

function message(level: 'info' | 'warn' | 'error') {
  return async (text: string, ...items: any[]) => {
    const titles = items.filter((i) => typeof i === 'string' || (i && typeof i.title === 'string'))
      .map((i) => (typeof i === 'string' ? i : i.title));
    // MessageOptions: { modal, detail }, the first object without a title.
    const opts = items.find((i) => i && typeof i === 'object' && typeof i.title !== 'string');
    recorded.messages.push({ level, text, items: titles, modal: opts?.modal === true, detail: opts?.detail });
    const a = answers.message.length ? answers.message.shift() : undefined;
    return a === undefined ? undefined : items.find((i) => (typeof i === 'string' ? i : i.title) === a);
  };
}

let decorationSeq = 0;
/** Every decoration type made, by key: its options. */
export const decorationTypes = new Map<string, any>();

export const window = {
  get activeTextEditor(): TextEditor | undefined { return active; },
  get visibleTextEditors(): TextEditor[] { return [...editors]; },
  onDidChangeVisibleTextEditors: windowEvents.visible.event,
  onDidChangeActiveTextEditor: windowEvents.active.event,
  onDidChangeTextEditorSelection: new EventEmitter<any>().event,
  /** One tab group: a tab per editor opened (openEditor, showTextDocument). */
  tabGroups: {
    all: [{ tabs: [] as any[] }] as any[],
    onDidChangeTabs: new EventEmitter<any>().event,
    async close(t: any): Promise<boolean> {
      const list = Array.isArray(t) ? t : [t];
      const g = window.tabGroups.all[0];
      g.tabs = g.tabs.filter((x: any) => !list.includes(x));
      return true;
    },
  },
  showInformationMessage: message('info'),
  showWarningMessage: message('warn'),
  showErrorMessage: message('error'),
  async showInputBox(_o?: any): Promise<string | undefined> { return answers.input.shift(); },
  async showQuickPick(items: any, options?: any): Promise<any> {
    const list = await items;
    recorded.picks.push({ items: list, options });
    const a = answers.pick.shift();
    return a ? a(list) : undefined;
  },
  setStatusBarMessage(text: string): Disposable { recorded.statusMessages.push(text); return new Disposable(); },
  createOutputChannel: outputChannel,
  createStatusBarItem(): any {
    return { text: '', tooltip: '', command: undefined, name: '', show() { /* */ }, hide() { /* */ }, dispose() { /* */ } };
  },
  createTextEditorDecorationType(opts: any): any {
    const key = `deco-${++decorationSeq}`;
    decorationTypes.set(key, opts);
    return { key, options: opts, dispose() { /* */ } };
  },
  async withProgress(opts: any, task: (p: any, t: any) => Promise<any>): Promise<any> {
    const cts = new CancellationTokenSource();
    recorded.progressSources.push(cts);
    recorded.progress.push({ title: opts.title });
    return task({ report: (v: any) => recorded.progress.push({ title: opts.title, message: v?.message }) }, cts.token);
  },
  async showTextDocument(d: any, options?: any): Promise<TextEditor> {
    const doc: TextDocument = d instanceof TextDocument ? d : documents.find((x) => x.uri.toString() === d.toString())!;
    recorded.shown.push({ uri: doc.uri.toString(), options });
    addTab(doc.uri);
    let ed = editors.find((e) => e.document === doc);
    if (!ed) {
      ed = new TextEditor(doc);
      editors.push(ed);
      windowEvents.visible.fire([...editors]);
    }
    if (!options?.preserveFocus) {
      active = ed;
    }
    return ed;
  },
  createWebviewPanel(viewType: string, title: string, _col: any, options: any): any {
    const received = new EventEmitter<any>();
    const disposed = new EventEmitter<void>();
    const panel: any = {
      viewType, title, options, posted: [] as any[], revealed: 0,
      webview: {
        html: '', cspSource: 'vscode-webview-resource:', options,
        postMessage: async (m: any) => { panel.posted.push(m); return true; },
        onDidReceiveMessage: received.event,
        asWebviewUri: (u: Uri) => u,
      },
      /** What the page's script would send (tests call it). */
      receive: (m: any) => received.fire(m),
      reveal: () => { panel.revealed++; },
      onDidDispose: disposed.event,
      dispose: () => disposed.fire(),
    };
    recorded.webviews.push(panel);
    return panel;
  },
  registerWebviewPanelSerializer(): Disposable { return new Disposable(); },
  createTreeView(id: string, options: any): any {
    const view = { id, visible: true, message: undefined as string | undefined, title: undefined as string | undefined,
      onDidChangeVisibility: new EventEmitter<any>().event, dispose() { recorded.trees.delete(id); } };
    recorded.trees.set(id, { provider: options.treeDataProvider, view });
    return view;
  },
  registerTreeDataProvider(id: string, provider: any): Disposable {
    recorded.trees.set(id, { provider, view: undefined });
    return new Disposable(() => recorded.trees.delete(id));
  },
};

export const workspace = {
  get textDocuments(): TextDocument[] { return [...documents]; },
  get workspaceFolders(): any[] | undefined { return folders; },
  get rootPath(): string | undefined { return folders?.[0].uri.fsPath; },
  notebookDocuments: [] as any[],
  name: undefined,
  isTrusted: true,
  onDidChangeTextDocument: workspaceEvents.change.event,
  onDidOpenTextDocument: workspaceEvents.open.event,
  onDidCloseTextDocument: workspaceEvents.close.event,
  onDidSaveTextDocument: workspaceEvents.save.event,
  onWillSaveTextDocument: workspaceEvents.willSave.event,
  onDidChangeConfiguration: workspaceEvents.config.event,
  onDidChangeWorkspaceFolders: new EventEmitter<any>().event,
  onDidGrantWorkspaceTrust: new EventEmitter<any>().event,
  getConfiguration(section?: string): any {
    const prefix = section ? `${section}.` : '';
    return {
      get: (key: string, def?: any) => (prefix + key in settings ? settings[prefix + key] : def),
      has: (key: string) => prefix + key in settings,
      inspect: () => undefined,
      update: async (key: string, v: any) => { settings[prefix + key] = v; },
    };
  },
  async applyEdit(we: WorkspaceEdit): Promise<boolean> {
    // VS Code applies the edit on its own turn, after the caller yields.
    await new Promise((r) => setImmediate(r));
    return applyNow(we);
  },
  registerTextDocumentContentProvider(scheme: string, p: any): Disposable {
    providers.set(scheme, p);
    return new Disposable(() => providers.delete(scheme));
  },
  async openTextDocument(x: any): Promise<TextDocument> {
    const uri = x instanceof Uri ? x : typeof x === 'string' ? Uri.file(x) : Uri.from({ scheme: 'untitled', path: `/Untitled-${documents.length + 1}` });
    let doc = documents.find((d) => d.uri.toString() === uri.toString());
    if (!doc) {
      const p = providers.get(uri.scheme);
      doc = new TextDocument(uri, x?.language ?? 'plaintext', p ? p.provideTextDocumentContent(uri) ?? '' : x?.content ?? '');
      documents.push(doc);
      workspaceEvents.open.fire(doc);
    }
    return doc;
  },
  createFileSystemWatcher(): any {
    return { onDidCreate: new EventEmitter().event, onDidChange: new EventEmitter().event, onDidDelete: new EventEmitter().event, dispose() { /* */ } };
  },
  getWorkspaceFolder(): any { return undefined; },
  asRelativePath(p: any): string { return String(p); },
  fs: {},
};

export const languages = {
  createDiagnosticCollection(name = ''): DiagnosticCollection {
    const c = new DiagnosticCollection(name);
    collections.push(c);
    return c;
  },
  registerCodeLensProvider(_sel: any, p: any): Disposable {
    codeLensProviders.push(p);
    return new Disposable(() => {
      const i = codeLensProviders.indexOf(p);
      if (i >= 0) {
        codeLensProviders.splice(i, 1);
      }
    });
  },
  // The server advertises code actions for plain LSP clients
  // (docs/lsp.md); the client registers a provider for them, as in VS Code.
  registerCodeActionsProvider(_sel: any, p: any): Disposable {
    codeActionProviders.push(p);
    return new Disposable(() => {
      const i = codeActionProviders.indexOf(p);
      if (i >= 0) {
        codeActionProviders.splice(i, 1);
      }
    });
  },
  getDiagnostics(uri?: Uri): any {
    return uri ? collections.flatMap((c) => c.get(uri) ?? []) : [];
  },
  match(): number { return 0; },
  onDidChangeDiagnostics: new EventEmitter<any>().event,
};

export const commands = {
  registerCommand(name: string, fn: (...args: any[]) => any): Disposable {
    if (commandTable.has(name)) {
      throw new Error(`command '${name}' already exists`);
    }
    commandTable.set(name, fn);
    return new Disposable(() => commandTable.delete(name));
  },
  async executeCommand(name: string, ...args: any[]): Promise<any> {
    recorded.executed.push({ command: name, args });
    if (name === 'setContext') {
      recorded.context.set(args[0], args[1]);
      return undefined;
    }
    const fn = commandTable.get(name);
    return fn ? fn(...args) : undefined;
  },
  async getCommands(): Promise<string[]> { return [...commandTable.keys()]; },
};

export const env = {
  appName: 'Visual Studio Code (test stub)',
  appRoot: '/nonexistent',
  language: 'en',
  machineId: 'test',
  sessionId: 'test',
  uriScheme: 'vscode',
  uiKind: UIKind.Desktop,
  async openExternal(): Promise<boolean> { return true; },
  clipboard: { async readText() { return ''; }, async writeText() { /* */ } },
};

export const extensions = {
  all: [] as any[],
  getExtension(): any { return undefined; },
  onDidChange: new EventEmitter<void>().event,
};

export enum TreeItemCollapsibleState { None = 0, Collapsed = 1, Expanded = 2 }
export class TreeItem {
  description?: string;
  tooltip?: any;
  constructor(public label: any, public collapsibleState?: TreeItemCollapsibleState) {}
}

/** The ExtensionContext activate() gets, with an in-memory SecretStorage. */
export function extensionContext(): any {
  return {
    subscriptions: [] as { dispose(): any }[],
    extensionPath: path.resolve(__dirname, '../../..'),
    secrets: {
      get: async (k: string) => secretsStore.get(k),
      store: async (k: string, v: string) => { secretsStore.set(k, v); },
      delete: async (k: string) => { secretsStore.delete(k); },
      onDidChange: new EventEmitter<any>().event,
    },
    globalState: { get: () => undefined, update: async () => undefined, keys: () => [] },
    workspaceState: { get: () => undefined, update: async () => undefined, keys: () => [] },
  };
}

// Classes vscode-languageclient extends when it loads; kiln announces none
// of the features that would make them (completion, links, hints, ...).
export class CompletionItem { constructor(public label: any) {} }
export class DocumentLink { constructor(public range: Range) {} }
export class InlayHint { constructor(public position: Position, public label: any) {} }
export class SymbolInformation { constructor(public name: string) {} }
export class CallHierarchyItem { constructor(public name: string) {} }
export class TypeHierarchyItem { constructor(public name: string) {} }
export class CodeAction { constructor(public title: string) {} }
export class Location { constructor(public uri: Uri, public range: Range) {} }
export class RelativePattern { constructor(public base: any, public pattern: string) {} }
export enum FileType { Unknown = 0, File = 1, Directory = 2 }
export class CodeActionKind {
  private constructor(readonly value: string) {}
  static readonly Empty = new CodeActionKind('');
  static readonly QuickFix = new CodeActionKind('quickfix');
  static readonly Refactor = new CodeActionKind('refactor');
  static readonly RefactorExtract = new CodeActionKind('refactor.extract');
  static readonly RefactorInline = new CodeActionKind('refactor.inline');
  static readonly RefactorMove = new CodeActionKind('refactor.move');
  static readonly RefactorRewrite = new CodeActionKind('refactor.rewrite');
  static readonly Source = new CodeActionKind('source');
  static readonly SourceOrganizeImports = new CodeActionKind('source.organizeImports');
  static readonly SourceFixAll = new CodeActionKind('source.fixAll');
  static readonly Notebook = new CodeActionKind('notebook');
  append(p: string): CodeActionKind { return new CodeActionKind(this.value ? `${this.value}.${p}` : p); }
}
