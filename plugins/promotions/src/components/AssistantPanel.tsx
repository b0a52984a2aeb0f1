import { configApiRef, fetchApiRef, useApi } from '@backstage/frontend-plugin-api';
import {
  Alert,
  Badge,
  Button,
  Card,
  CardBody,
  CardHeader,
  Dialog,
  DialogBody,
  DialogFooter,
  DialogHeader,
  Flex,
  Select,
  Switch,
  Text,
  TextAreaField,
  TextField,
} from '@backstage/ui';
import { ErrorState, LoadingState, promotionsApiRef, usePageTitle } from '@kpromo/plugin-promotions-react';
import { type ReactNode, useCallback, useEffect, useMemo, useState } from 'react';
import { type FormField, isDestructive, schemaToFields, type ToolInfo, toArguments } from './assistantSchema';
import { type ChatMessage, completeChat, resultText, SYSTEM_PROMPT, type ToolCall } from './chat';
import { connectMcp, type McpConnection, type ToolResult } from './mcpConnection';

/** Renders structured tool output: arrays of objects as tables, objects as key/value lists. */
export function StructuredView({ value, depth = 0 }: { value: unknown; depth?: number }): ReactNode {
  if (value === null || value === undefined) return <Text color="secondary">—</Text>;
  if (typeof value === 'string' && /^sha256:[a-f0-9]{64}$/.test(value))
    return (
      <Text variant="body-small" title={value}>
        {value.slice(0, 19)}…
      </Text>
    );
  if (typeof value !== 'object') return <Text variant="body-small">{String(value)}</Text>;
  if (depth > 3) return <code>{JSON.stringify(value)}</code>;
  if (Array.isArray(value)) {
    if (!value.length) return <Text color="secondary">(none)</Text>;
    if (value.every((v) => v && typeof v === 'object' && !Array.isArray(v))) {
      const cols = [...new Set(value.flatMap((v) => Object.keys(v as object)))];
      return (
        <table style={{ borderCollapse: 'collapse', fontSize: 13 }}>
          <thead>
            <tr>
              {cols.map((c) => (
                <th key={c} style={{ textAlign: 'left', padding: '2px 8px', borderBottom: '1px solid #ccc' }}>
                  {c}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {value.map((row, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: rows have no identity
              <tr key={i}>
                {cols.map((c) => (
                  <td key={c} style={{ padding: '2px 8px', verticalAlign: 'top' }}>
                    <StructuredView value={(row as Record<string, unknown>)[c]} depth={depth + 1} />
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      );
    }
    return (
      <Text variant="body-small">
        {value.map((v) => (typeof v === 'object' ? JSON.stringify(v) : String(v))).join(', ')}
      </Text>
    );
  }
  return (
    <dl style={{ margin: 0, display: 'grid', gridTemplateColumns: 'max-content 1fr', gap: '2px 12px' }}>
      {Object.entries(value as Record<string, unknown>).map(([k, v]) => (
        <FragmentRow key={k} k={k} v={<StructuredView value={v} depth={depth + 1} />} />
      ))}
    </dl>
  );
}

function FragmentRow({ k, v }: { k: string; v: ReactNode }) {
  return (
    <>
      <dt style={{ fontWeight: 600 }}>{k}</dt>
      <dd style={{ margin: 0 }}>{v}</dd>
    </>
  );
}

export function ToolResultView({ result }: { result: ToolResult }) {
  const [raw, setRaw] = useState(false);
  const text = (result.content ?? [])
    .map((c) => c.text)
    .filter(Boolean)
    .join('\n');
  return (
    <Flex direction="column" gap="2" data-testid="tool-result">
      {result.isError ? <Alert status="danger" title="The tool reported an error" description={text} /> : null}
      {result.structuredContent !== undefined && !raw ? (
        <StructuredView value={result.structuredContent} />
      ) : !result.isError ? (
        <pre style={{ whiteSpace: 'pre-wrap', margin: 0, fontSize: 12 }}>
          {raw ? JSON.stringify(result, null, 2) : text}
        </pre>
      ) : null}
      <Switch label="Raw" isSelected={raw} onChange={setRaw} />
    </Flex>
  );
}

function FieldInput({ field, value, onChange }: { field: FormField; value: unknown; onChange: (v: unknown) => void }) {
  const label = `${field.label}${field.required ? ' *' : ''}`;
  switch (field.kind) {
    case 'boolean':
      return <Switch label={label} isSelected={value === true} onChange={onChange} />;
    case 'enum':
      return (
        <Select
          label={label}
          description={field.description}
          selectedKey={(value as string) ?? null}
          onSelectionChange={(k) => onChange(k === null ? undefined : String(k))}
          options={(field.options ?? []).map((o) => ({ value: o, label: o }))}
        />
      );
    case 'json':
      return (
        <TextAreaField
          label={label}
          description={`${field.description ?? ''} (JSON)`}
          value={(value as string) ?? ''}
          onChange={onChange}
        />
      );
    default:
      return (
        <TextField
          label={label}
          description={field.kind === 'list' ? `${field.description ?? ''} (comma separated)` : field.description}
          value={value === undefined ? '' : String(value)}
          onChange={onChange}
          inputMode={field.kind === 'number' ? 'decimal' : undefined}
        />
      );
  }
}

/** A form generated from the tool's input schema; destructive tools ask for confirmation first. */
export function ToolForm({ tool, onRun }: { tool: ToolInfo; onRun: (args: Record<string, unknown>) => Promise<void> }) {
  const fields = useMemo(() => schemaToFields(tool.inputSchema), [tool]);
  const [values, setValues] = useState<Record<string, unknown>>(() =>
    Object.fromEntries(
      fields
        .filter((f) => f.defaultValue !== undefined)
        .map((f) => [f.name, f.kind === 'boolean' ? f.defaultValue : String(f.defaultValue)]),
    ),
  );
  const [error, setError] = useState<string | undefined>();
  const [pending, setPending] = useState<Record<string, unknown> | undefined>();
  const [busy, setBusy] = useState(false);
  const destructive = isDestructive(tool);

  const execute = async (args: Record<string, unknown>) => {
    setBusy(true);
    try {
      await onRun(args);
    } finally {
      setBusy(false);
      setPending(undefined);
    }
  };

  const submit = () => {
    setError(undefined);
    let args: Record<string, unknown>;
    try {
      args = toArguments(fields, values);
    } catch (e) {
      setError((e as Error).message);
      return;
    }
    if (destructive) setPending(args);
    else execute(args);
  };

  return (
    <Flex direction="column" gap="3" data-testid={`tool-form-${tool.name}`}>
      {fields.map((f) => (
        <FieldInput
          key={f.name}
          field={f}
          value={values[f.name]}
          onChange={(v) => setValues((s) => ({ ...s, [f.name]: v }))}
        />
      ))}
      {error ? <Text color="danger">{error}</Text> : null}
      <Flex gap="2" align="center">
        <Button variant="primary" destructive={destructive} isPending={busy} onPress={submit}>
          Run {tool.name}
        </Button>
        {destructive ? <Badge size="small">destructive — asks for confirmation</Badge> : null}
      </Flex>
      <ConfirmToolCall
        call={pending ? { tool, args: pending } : undefined}
        busy={busy}
        onConfirm={() => pending && execute(pending)}
        onCancel={() => setPending(undefined)}
      />
    </Flex>
  );
}

export function ConfirmToolCall({
  call,
  busy,
  onConfirm,
  onCancel,
}: {
  call?: { tool: ToolInfo; args: Record<string, unknown> };
  busy?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  return (
    <Dialog isOpen={!!call} onOpenChange={(o) => !o && onCancel()} width={520}>
      <DialogHeader>Run {call?.tool.name}?</DialogHeader>
      <DialogBody>
        <Flex direction="column" gap="2">
          <Text as="p">
            {call?.tool.title ?? call?.tool.name} changes your environments. It will run with these arguments:
          </Text>
          <pre data-testid="confirm-args" style={{ whiteSpace: 'pre-wrap', fontSize: 12 }}>
            {JSON.stringify(call?.args ?? {}, null, 2)}
          </pre>
        </Flex>
      </DialogBody>
      <DialogFooter>
        <Button variant="secondary" onPress={onCancel}>
          Cancel
        </Button>
        <Button variant="primary" destructive isPending={busy} onPress={onConfirm}>
          Confirm and run
        </Button>
      </DialogFooter>
    </Dialog>
  );
}

function ToolsView({ connection, tools }: { connection: McpConnection; tools: ToolInfo[] }) {
  const [selected, setSelected] = useState<string>(tools[0]?.name ?? '');
  const [result, setResult] = useState<ToolResult | undefined>();
  const [error, setError] = useState<Error | undefined>();
  const tool = tools.find((t) => t.name === selected);
  return (
    <Flex direction="column" gap="3">
      <Select
        label="Tool"
        selectedKey={selected}
        onSelectionChange={(k) => {
          setSelected(String(k));
          setResult(undefined);
          setError(undefined);
        }}
        options={tools.map((t) => ({ value: t.name, label: `${t.name}${isDestructive(t) ? ' (destructive)' : ''}` }))}
      />
      {tool ? (
        <>
          <Text as="p" variant="body-small" color="secondary">
            {tool.description}
          </Text>
          <ToolForm
            key={tool.name}
            tool={tool}
            onRun={async (args) => {
              setError(undefined);
              try {
                setResult(await connection.callTool(tool.name, args));
              } catch (e) {
                setResult(undefined);
                setError(e as Error);
              }
            }}
          />
        </>
      ) : null}
      {error ? <Alert status="danger" title="Tool call failed" description={error.message} /> : null}
      {result ? <ToolResultView result={result} /> : null}
    </Flex>
  );
}

type ChatEntry =
  | { kind: 'user'; text: string }
  | { kind: 'assistant'; text: string }
  | { kind: 'tool'; name: string; args: unknown; result?: ToolResult; rejected?: boolean };

function ChatView({
  connection,
  tools,
  endpoint,
  model,
}: {
  connection: McpConnection;
  tools: ToolInfo[];
  endpoint: string;
  model?: string;
}) {
  const fetchApi = useApi(fetchApiRef);
  const [input, setInput] = useState('');
  const [history, setHistory] = useState<ChatMessage[]>([{ role: 'system', content: SYSTEM_PROMPT }]);
  const [entries, setEntries] = useState<ChatEntry[]>([]);
  const [waiting, setWaiting] = useState<{ calls: ToolCall[]; index: number; messages: ChatMessage[] } | undefined>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>();

  /** Runs tool calls in order; stops at a destructive one until the user clicks. */
  const drive = useCallback(
    async (messages: ChatMessage[], calls: ToolCall[], index: number, approved?: boolean): Promise<void> => {
      let msgs = messages;
      for (let i = index; i < calls.length; i++) {
        const c = calls[i];
        const tool = tools.find((t) => t.name === c.function.name);
        let args: Record<string, unknown> = {};
        try {
          args = JSON.parse(c.function.arguments || '{}');
        } catch {
          // the model sent bad JSON; the tool will say what is missing
        }
        if (tool && isDestructive(tool) && !(i === index && approved !== undefined)) {
          setWaiting({ calls, index: i, messages: msgs });
          return;
        }
        if (i === index && approved === false) {
          setEntries((e) => [...e, { kind: 'tool', name: c.function.name, args, rejected: true }]);
          msgs = [...msgs, { role: 'tool', tool_call_id: c.id, content: 'The user rejected this call.' }];
          continue;
        }
        const result = tool
          ? await connection
              .callTool(c.function.name, args)
              .catch((e: Error): ToolResult => ({ isError: true, content: [{ type: 'text', text: e.message }] }))
          : { isError: true, content: [{ type: 'text', text: `unknown tool ${c.function.name}` }] };
        setEntries((e) => [...e, { kind: 'tool', name: c.function.name, args, result }]);
        msgs = [...msgs, { role: 'tool', tool_call_id: c.id, content: resultText(result).slice(0, 20_000) }];
      }
      const reply = await completeChat({ endpoint, model, messages: msgs, tools, fetch: fetchApi.fetch });
      msgs = [...msgs, reply];
      setHistory(msgs);
      if (reply.content) setEntries((e) => [...e, { kind: 'assistant', text: reply.content ?? '' }]);
      if (reply.tool_calls?.length) await drive(msgs, reply.tool_calls, 0);
    },
    [connection, endpoint, fetchApi, model, tools],
  );

  const guarded = async (f: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await f();
    } catch (e) {
      setError(e as Error);
    } finally {
      setBusy(false);
    }
  };

  const send = () =>
    guarded(async () => {
      const text = input.trim();
      if (!text) return;
      setInput('');
      setEntries((e) => [...e, { kind: 'user', text }]);
      const msgs: ChatMessage[] = [...history, { role: 'user', content: text }];
      setHistory(msgs);
      await drive(msgs, [], 0);
    });

  const decide = (ok: boolean) => {
    const w = waiting;
    setWaiting(undefined);
    if (w) guarded(() => drive(w.messages, w.calls, w.index, ok));
  };
  const pendingCall = waiting?.calls[waiting.index];
  const pendingTool = tools.find((t) => t.name === pendingCall?.function.name);
  let pendingArgs: Record<string, unknown> = {};
  try {
    pendingArgs = JSON.parse(pendingCall?.function.arguments || '{}');
  } catch {
    pendingArgs = {};
  }

  return (
    <Flex direction="column" gap="3">
      <Flex direction="column" gap="2" data-testid="chat-log">
        {entries.map((e, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: append-only log
          <Card key={i}>
            <CardBody>
              {e.kind === 'tool' ? (
                <Flex direction="column" gap="1">
                  <Text weight="bold">
                    tool {e.name} {e.rejected ? '(rejected by you)' : ''}
                  </Text>
                  <code style={{ fontSize: 12 }}>{JSON.stringify(e.args)}</code>
                  {e.result ? <ToolResultView result={e.result} /> : null}
                </Flex>
              ) : (
                <Text as="p">
                  <strong>{e.kind === 'user' ? 'You' : 'Assistant'}:</strong> {e.text}
                </Text>
              )}
            </CardBody>
          </Card>
        ))}
      </Flex>
      {error ? <Alert status="danger" title="Chat failed" description={error.message} /> : null}
      <Flex gap="2" align="end">
        <TextField
          label="Ask"
          placeholder="e.g. what would a promotion from stable to prod change?"
          value={input}
          onChange={setInput}
          style={{ flex: 1 }}
        />
        <Button variant="primary" isPending={busy} onPress={send}>
          Send
        </Button>
      </Flex>
      <ConfirmToolCall
        call={pendingTool ? { tool: pendingTool, args: pendingArgs } : undefined}
        onConfirm={() => decide(true)}
        onCancel={() => decide(false)}
      />
    </Flex>
  );
}

/** Talks to the controller's MCP server through the promotions backend's /mcp proxy. */
export function AssistantPanel({ connect }: { connect?: () => Promise<McpConnection> }) {
  usePageTitle('Assistant · Promotions');
  const api = useApi(promotionsApiRef);
  const fetchApi = useApi(fetchApiRef);
  const config = useApi(configApiRef);
  const endpoint = config.getOptionalString('promotions.assistant.chatEndpoint');
  const model = config.getOptionalString('promotions.assistant.model');
  const [state, setState] = useState<{ connection?: McpConnection; tools?: ToolInfo[]; error?: Error }>({});
  const [attempt, setAttempt] = useState(0);
  const [mode, setMode] = useState<'tools' | 'chat'>(endpoint ? 'chat' : 'tools');

  // biome-ignore lint/correctness/useExhaustiveDependencies: reconnect on retry
  useEffect(() => {
    let conn: McpConnection | undefined;
    let cancelled = false;
    (async () => {
      try {
        conn = connect ? await connect() : await connectMcp(await api.getMcpUrl(), fetchApi.fetch);
        const tools = await conn.listTools();
        if (!cancelled) setState({ connection: conn, tools });
      } catch (e) {
        if (!cancelled) setState({ error: e as Error });
      }
    })();
    return () => {
      cancelled = true;
      conn?.close().catch(() => undefined);
    };
  }, [attempt]);

  if (state.error)
    return (
      <ErrorState
        title="Could not reach the MCP server"
        error={state.error}
        onRetry={() => {
          setState({});
          setAttempt((a) => a + 1);
        }}
      />
    );
  if (!state.connection || !state.tools) return <LoadingState label="Connecting to the MCP server" />;
  return (
    <Card>
      <CardHeader>
        <Flex justify="between" align="center">
          <Text as="h3" variant="title-small">
            Assistant · {state.tools.length} tools
          </Text>
          {endpoint ? (
            <Switch label="Chat" isSelected={mode === 'chat'} onChange={(c) => setMode(c ? 'chat' : 'tools')} />
          ) : (
            <Text variant="body-small" color="secondary">
              Set promotions.assistant.chatEndpoint to chat in natural language.
            </Text>
          )}
        </Flex>
      </CardHeader>
      <CardBody>
        {mode === 'chat' && endpoint ? (
          <ChatView connection={state.connection} tools={state.tools} endpoint={endpoint} model={model} />
        ) : (
          <ToolsView connection={state.connection} tools={state.tools} />
        )}
      </CardBody>
    </Card>
  );
}
