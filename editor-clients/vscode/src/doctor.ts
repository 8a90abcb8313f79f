// doctor.ts: kiln.doctor (Kiln: Doctor): the server's kiln/doctor report,
// what kiln can promise on this machine, one aligned line an item in the
// Kiln output channel with its fix below, and a message with the verdict.
import * as vscode from 'vscode';
import { Server } from './server';

/** s with its control characters shown as ^X (a path, a URL or a config
 * value from the server is never acted on by the output channel). */
export function visible(s: unknown): string {
  return String(s ?? '').replace(/[\u0000-\u001f\u007f]/g, (c) =>
    (c === '\u007f' ? '^?' : '^' + String.fromCharCode(c.charCodeAt(0) + 64)));
}

/** The report as text: one line an item (name, status, value), its detail
 * and fix indented below. */
export function doctorText(report: any): string {
  const items: any[] = Array.isArray(report?.items) ? report.items : [];
  const w = Math.max(0, ...items.map((i) => visible(i.name).length));
  const pad = ' '.repeat(w + 12);
  const lines: string[] = [];
  for (const it of items) {
    lines.push(`${visible(it.name).padEnd(w)}  ${visible(it.status).padEnd(8)}  ${visible(it.value)}`);
    if (it.detail) {
      lines.push(pad + visible(it.detail));
    }
    if (it.fix) {
      lines.push(pad + 'fix: ' + visible(it.fix));
    }
  }
  return lines.join('\n') + '\n';
}

export async function doctor(server: Server, output: vscode.OutputChannel,
  notify: (msg: string, level?: 'info' | 'warn' | 'error') => void): Promise<any> {
  const report = await server.request('kiln/doctor', {});
  output.appendLine('kiln doctor:');
  output.append(doctorText(report));
  output.show(true);
  const bad = (report?.items ?? []).filter((i: any) => i.status !== 'ok').map((i: any) => visible(i.name));
  if (report?.exitCode === 0) {
    notify('doctor: every promise holds');
  } else if (report?.exitCode === 2) {
    notify(`doctor: kiln cannot run code here (${bad.join(', ')}); the fixes are in the Kiln output`, 'error');
  } else {
    notify(`doctor: degraded: ${bad.join(', ')}; the fixes are in the Kiln output`, 'warn');
  }
  return report;
}
