/**
 * Request validation for the fake Anthropic server: the protocol rules the real
 * Messages API enforces with a 400 `invalid_request_error`. Each check returns a
 * message naming the offending field (in the API's `messages.1.content.0` style),
 * or null when the body is acceptable.
 */

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;

export function validateMessagesBody(body: unknown): string | null {
  if (!isObject(body)) return 'request body must be a JSON object';
  if (typeof body.model !== 'string' || body.model === '') return 'model: Field required (a non-empty string)';
  const maxTokens = body.max_tokens;
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1) {
    return `max_tokens: Field required (a positive integer), got ${JSON.stringify(maxTokens)}`;
  }
  if (body.stream !== undefined && typeof body.stream !== 'boolean') return 'stream: Input should be a valid boolean';
  return validateSystem(body.system) ?? validateTools(body.tools) ?? validateMessages(body.messages);
}

function validateSystem(system: unknown): string | null {
  if (system === undefined || typeof system === 'string') return null;
  if (!Array.isArray(system)) return 'system: Input should be a string or a list of text blocks';
  for (const [i, b] of system.entries()) {
    if (!isObject(b) || b.type !== 'text' || typeof b.text !== 'string') return `system.${i}: Input should be a text block`;
  }
  return null;
}

function validateTools(tools: unknown): string | null {
  if (tools === undefined) return null;
  if (!Array.isArray(tools)) return 'tools: Input should be a valid list';
  const names = new Set<string>();
  for (const [i, t] of tools.entries()) {
    if (!isObject(t)) return `tools.${i}: Input should be an object`;
    if (typeof t.name !== 'string' || !TOOL_NAME.test(t.name)) {
      return `tools.${i}.name: String should match pattern '${TOOL_NAME.source}'`;
    }
    if (names.has(t.name)) return `tools: Tool names must be unique, found duplicate "${t.name}"`;
    names.add(t.name);
    // Anthropic-defined tools (`type: 'bash_20250124'` etc.) carry no input_schema.
    const custom = t.type === undefined || t.type === null || t.type === 'custom';
    if (custom && (!isObject(t.input_schema) || t.input_schema.type !== 'object')) {
      return `tools.${i}.custom.input_schema: Field required (a JSON schema with type "object")`;
    }
  }
  return null;
}

function contentBlocks(content: unknown): Obj[] | string {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return 'content: Input should be a string or a list of content blocks';
  for (const [j, b] of content.entries()) {
    if (!isObject(b) || typeof b.type !== 'string') return `content.${j}: Input should be a content block with a "type"`;
  }
  return content as Obj[];
}

function validateMessages(messages: unknown): string | null {
  if (!Array.isArray(messages) || messages.length === 0) return 'messages: at least one message is required';

  const seenToolUseIds = new Set<string>();
  let pendingToolUses: string[] = []; // tool_use ids of the previous (assistant) message

  for (const [i, m] of messages.entries()) {
    const at = `messages.${i}`;
    if (!isObject(m)) return `${at}: Input should be an object with "role" and "content"`;
    if (m.role !== 'user' && m.role !== 'assistant') return `${at}.role: Input should be 'user' or 'assistant'`;
    if (i === 0 && m.role !== 'user') return 'messages.0: first message must use the "user" role';
    if (i > 0 && (messages[i - 1] as Obj).role === m.role) {
      return `messages: roles must alternate between "user" and "assistant", but found multiple "${m.role}" roles in a row (messages.${i - 1} and ${at})`;
    }
    const blocks = contentBlocks(m.content);
    if (typeof blocks === 'string') return `${at}.${blocks}`;
    const isFinal = i === messages.length - 1;
    if (blocks.length === 0 && !(isFinal && m.role === 'assistant')) {
      return `${at}: all messages must have non-empty content except for the optional final assistant message`;
    }

    for (const [j, b] of blocks.entries()) {
      const bat = `${at}.content.${j}`;
      if (b.type === 'text' && (typeof b.text !== 'string' || b.text === '')) return `${bat}: text content blocks must be non-empty`;
      if (b.type === 'tool_use') {
        if (m.role !== 'assistant') return `${bat}: tool_use blocks may only appear in assistant messages`;
        if (typeof b.id !== 'string' || b.id === '' || typeof b.name !== 'string' || !isObject(b.input)) {
          return `${bat}: tool_use blocks need a string "id", a string "name" and an object "input"`;
        }
        if (seenToolUseIds.has(b.id)) return `${bat}: tool_use ids must be unique, found duplicate "${b.id}"`;
        seenToolUseIds.add(b.id);
      }
      if (b.type === 'tool_result') {
        if (m.role !== 'user') return `${bat}: tool_result blocks may only appear in user messages`;
        if (typeof b.tool_use_id !== 'string') return `${bat}.tool_use_id: Field required`;
      }
    }

    if (m.role === 'assistant') {
      pendingToolUses = blocks.filter((b) => b.type === 'tool_use').map((b) => b.id as string);
      continue;
    }

    const problem = checkToolResults(i, blocks, pendingToolUses);
    if (problem) return problem;
    pendingToolUses = [];
  }
  return null;
}

/** The user message at index `i` against the tool_use ids of the assistant message before it. */
function checkToolResults(i: number, blocks: Obj[], expected: string[]): string | null {
  const answered = new Set<string>();
  let sawOther = false;
  for (const [j, b] of blocks.entries()) {
    const bat = `messages.${i}.content.${j}`;
    if (b.type !== 'tool_result') {
      sawOther = true;
      continue;
    }
    const id = b.tool_use_id as string;
    if (!expected.includes(id)) {
      return `${bat}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
    }
    if (answered.has(id)) return `${bat}: found more than one \`tool_result\` block for tool_use_id ${id}`;
    if (sawOther) {
      return `${bat}: \`tool_result\` blocks must come before any other content in a user message (found one after a non-tool_result block)`;
    }
    answered.add(id);
  }
  const missing = expected.filter((id) => !answered.has(id));
  if (missing.length > 0) {
    return `messages.${i - 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
  }
  return null;
}
