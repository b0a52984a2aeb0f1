/**
 * How much an MCP tool may change, from its annotations (shared by the portal's assistant UI and the
 * backend's chat loop). MCP's defaults apply: a tool that is not read-only may write, and one that
 * does not say `destructiveHint: false` is destructive.
 */
export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  title?: string;
}

export type ToolSafety = 'read' | 'write' | 'destructive';

export function toolSafety(tool: { annotations?: ToolAnnotations }): ToolSafety {
  const a = tool.annotations ?? {};
  if (a.readOnlyHint === true) return 'read';
  return a.destructiveHint === false ? 'write' : 'destructive';
}

/** Destructive tools always need the user's click, also when the model calls them. */
export function isDestructive(tool: { annotations?: ToolAnnotations }): boolean {
  return toolSafety(tool) === 'destructive';
}

/**
 * Whether the assistant's chat loop must stop and ask the user before running a call of `tool`
 * (undefined: a tool the caller was not offered, which the loop never runs). The model is steered by
 * text anyone can write (names, annotations, tool output), so it never changes anything on its own:
 * destructive tools and every other writing tool (e.g. creating a plan) wait for the click.
 */
export function needsConfirmation(tool: { annotations?: ToolAnnotations } | undefined): boolean {
  return !tool || toolSafety(tool) !== 'read';
}
