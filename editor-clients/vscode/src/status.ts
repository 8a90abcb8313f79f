// status.ts: the status bar item: the server's state and model, and what
// kiln is doing (thinking, writing, running). A click shows the output.
import * as vscode from 'vscode';

export class Status {
  readonly item: vscode.StatusBarItem;
  private state = 'not started';
  private doing: string | undefined;
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
    this.render();
  }

  render(): void {
    const icon = this.doing ? '$(sync~spin)' : this.state.startsWith('crashed') ? '$(error)' : '$(flame)';
    const what = this.doing ?? (this.state === 'ready' ? (this.model ?? 'ready') : this.state);
    this.item.text = `${icon} kiln: ${what}`;
    this.item.tooltip = `kiln server: ${this.state}${this.version ? ` (${this.version})` : ''}` +
      `${this.model ? `\nmodel: ${this.model}` : ''}\nClick to show the output.`;
  }

  dispose(): void {
    this.item.dispose();
  }
}
