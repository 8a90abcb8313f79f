// status.ts: the status bar item: the server's state and model, what
// kiln is doing (thinking, writing, queued with its place in line,
// running) and how the last run ended (done or failed, with its exit and
// duration) until the next thing starts. A click shows the output.
import * as vscode from 'vscode';

export class Status {
  readonly item: vscode.StatusBarItem;
  private state = 'not started';
  private doing: string | undefined;
  private ended: { text: string; failed: boolean } | undefined;
  /** The texts shown, oldest first (the last 20; tests read them). */
  readonly seen: string[] = [];
  model: string | undefined;
  version: string | undefined;

  constructor() {
    this.item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
    this.item.command = 'kiln.showOutput';
    this.item.name = 'kiln';
    this.render();
    this.item.show();
  }

  setState(state: string, detail?: string): void {
    this.state = state;
    if (state === 'ready' && detail) {
      this.version = detail;
    }
    if (state === 'crashed' && detail) {
      this.state = `crashed (${detail.split('\n')[0].slice(0, 60)})`;
    }
    this.render();
  }

  busy(what: string | undefined): void {
    this.doing = what;
    if (what) {
      this.ended = undefined;
    }
    this.render();
  }

  /** A run ended: "done: exit 0, 12 ms", "failed: exit 3, ...". */
  done(summary: string, failed: boolean): void {
    this.doing = undefined;
    this.ended = { text: `${failed ? 'failed' : 'done'}: ${summary}`, failed };
    this.render();
  }

  render(): void {
    const crashed = this.state.startsWith('crashed');
    const ended = !this.doing && !crashed ? this.ended : undefined;
    const icon = this.doing ? '$(sync~spin)' : crashed ? '$(error)' : ended ? (ended.failed ? '$(error)' : '$(check)') : '$(flame)';
    const what = this.doing ?? ended?.text ?? (this.state === 'ready' ? (this.model ?? 'ready') : this.state);
    this.item.text = `${icon} kiln: ${what}`;
    if (this.seen[this.seen.length - 1] !== this.item.text) {
      this.seen.push(this.item.text);
      if (this.seen.length > 20) {
        this.seen.shift();
      }
    }
    this.item.tooltip = `kiln server: ${this.state}${this.version ? ` (${this.version})` : ''}` +
      `${this.model ? `\nmodel: ${this.model}` : ''}\nClick to show the output.`;
  }

  dispose(): void {
    this.item.dispose();
  }
}
