/**
 * Make command output safe to print on a terminal: control characters other
 * than newline and tab (ESC, CR, BEL, C1 controls ...) are shown escaped, so a
 * command cannot move the cursor, rewrite lines or retitle the window.
 */
export function terminalSafe(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
