import { configApiRef, discoveryApiRef, fetchApiRef, useApi } from '@backstage/frontend-plugin-api';
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
import type { AssistantStatus, ChatMessage, ChatRequestBody } from '@kpromo/plugin-promotions-common';
import { ErrorState, LoadingState, promotionsApiRef, usePageTitle } from '@kpromo/plugin-promotions-react';
import { type ReactNode, useEffect, useMemo, useState } from 'react';
import { type FormField, isDestructive, schemaToFields, type ToolInfo, toArguments } from './assistantSchema';
import { type AssistantClient, applyEvent, assistantClient, type ChatEntry, conversationAfter } from './chat';
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

function ToolCallCard({ entry }: { entry: Extract<ChatEntry, { kind: 'tool' }> }) {
  const [raw, setRaw] = useState(false);
  return (
    <Flex direction="column" gap="1" data-testid="tool-call">
      <Flex gap="2" align="center">
        <Text weight="bold">tool {entry.name}</Text>
        <Badge size="small">{entry.state === 'running' ? 'running…' : entry.state}</Badge>
        {entry.safety !== 'read' ? <Badge size="small">{entry.safety}</Badge> : null}
      </Flex>
      <code data-testid="tool-call-args" style={{ fontSize: 12 }}>
        {JSON.stringify(entry.args)}
      </code>
      {entry.state === 'failed' ? (
        <Alert status="danger" title="The tool reported an error" description={entry.summary} />
      ) : entry.summary !== undefined ? (
        <Flex direction="column" gap="1" data-testid="tool-call-result">
          {entry.structuredContent !== undefined && !raw ? (
            <StructuredView value={entry.structuredContent} />
          ) : (
            <pre style={{ whiteSpace: 'pre-wrap', margin: 0, fontSize: 12 }}>{entry.summary}</pre>
          )}
          {entry.structuredContent !== undefined ? <Switch label="Raw" isSelected={raw} onChange={setRaw} /> : null}
        </Flex>
      ) : null}
    </Flex>
  );
}

/** A call that changes something: nothing ran; it runs only when the user confirms it here. */
function PendingCallCard({
  entry,
  busy,
  onDecide,
}: {
  entry: Extract<ChatEntry, { kind: 'pending' }>;
  busy: boolean;
  onDecide: (approve: boolean) => void;
}) {
  return (
    <Flex direction="column" gap="2" data-testid="pending-call">
      <Text weight="bold">
        {entry.title ?? entry.name} ({entry.safety === 'destructive' ? 'destructive' : 'changes state'})
      </Text>
      <Text as="p" variant="body-small">
        The assistant wants to run <strong>{entry.name}</strong> as you with these arguments. Nothing has run yet.
      </Text>
      <pre data-testid="confirm-args" style={{ whiteSpace: 'pre-wrap', fontSize: 12, margin: 0 }}>
        {JSON.stringify(entry.args, null, 2)}
      </pre>
      {entry.decided ? (
        <Text color="secondary">{entry.decided === 'confirmed' ? 'Confirmed by you.' : 'Declined by you.'}</Text>
      ) : (
        <Flex gap="2">
          <Button variant="primary" destructive isPending={busy} onPress={() => onDecide(true)}>
            Confirm and run
          </Button>
          <Button variant="secondary" isDisabled={busy} onPress={() => onDecide(false)}>
            Decline
          </Button>
        </Flex>
      )}
    </Flex>
  );
}

/**
 * Chat with the model behind the promotions backend: streamed answers, a card per tool call (tool,
 * arguments, result), and a confirmation step for every call that would change something.
 */
function ChatView({ client }: { client: AssistantClient }) {
  const [input, setInput] = useState('');
  const [messages, setMessages] = useState<ChatMessage[]>([]);
  const [log, setLog] = useState<ChatEntry[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>();

  const run = async (body: ChatRequestBody) => {
    setBusy(true);
    setError(undefined);
    try {
      await client.chat(body, (e) => {
        setLog((l) => applyEvent(l, e));
        setMessages((m) => conversationAfter(e, m));
      });
    } catch (e) {
      setError(e as Error);
    } finally {
      setBusy(false);
    }
  };

  const send = () => {
    const text = input.trim();
    if (!text || busy) return;
    setInput('');
    setLog((l) => [...l, { kind: 'user', text }]);
    const next: ChatMessage[] = [...messages, { role: 'user', content: text }];
    setMessages(next);
    void run({ messages: next });
  };

  const decide = (entry: Extract<ChatEntry, { kind: 'pending' }>, approve: boolean) => {
    setLog((l) =>
      l.map((x) =>
        x.kind === 'pending' && x.id === entry.id ? { ...x, decided: approve ? 'confirmed' : 'declined' } : x,
      ),
    );
    void run({ messages, confirm: { id: entry.id, token: entry.token, approve } });
  };

  return (
    <Flex direction="column" gap="3">
      <Flex direction="column" gap="2" data-testid="chat-log" aria-live="polite">
        {log.map((e, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: append-only log
          <Card key={i}>
            <CardBody>
              {e.kind === 'tool' ? (
                <ToolCallCard entry={e} />
              ) : e.kind === 'pending' ? (
                <PendingCallCard entry={e} busy={busy} onDecide={(ok) => decide(e, ok)} />
              ) : e.kind === 'error' ? (
                <Alert status="danger" title="The assistant stopped" description={e.message} />
              ) : (
                <Text as="p" data-testid={e.kind === 'assistant' ? 'assistant-answer' : undefined}>
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
          placeholder="e.g. what version of checkout runs in prod?"
          value={input}
          onChange={setInput}
          onKeyDown={(ev) => {
            if (ev.key === 'Enter') send();
          }}
          style={{ flex: 1 }}
        />
        <Button variant="primary" isPending={busy} onPress={send}>
          Send
        </Button>
      </Flex>
    </Flex>
  );
}

/**
 * Talks to the controller's MCP server through the promotions backend's /mcp proxy (tool forms) and,
 * when the backend has a model (promotions.assistant.llm), chats through /assistant/chat.
 */
export function AssistantPanel({
  connect,
  chat,
}: {
  connect?: () => Promise<McpConnection>;
  /** The chat client (default: the promotions backend's /assistant routes). */
  chat?: AssistantClient;
}) {
  usePageTitle('Assistant · Promotions');
  const api = useApi(promotionsApiRef);
  const fetchApi = useApi(fetchApiRef);
  const discovery = useApi(discoveryApiRef);
  const config = useApi(configApiRef);
  // Chat used to go from the browser to this endpoint; the model now runs behind the backend.
  const legacyEndpoint = config.getOptionalString('promotions.assistant.chatEndpoint');
  const client = useMemo(
    () => chat ?? assistantClient(() => discovery.getBaseUrl('promotions'), fetchApi.fetch),
    [chat, discovery, fetchApi],
  );
  const [state, setState] = useState<{ connection?: McpConnection; tools?: ToolInfo[]; error?: Error }>({});
  const [status, setStatus] = useState<AssistantStatus | undefined>();
  const [attempt, setAttempt] = useState(0);
  const [mode, setMode] = useState<'tools' | 'chat' | undefined>();

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

  useEffect(() => {
    let cancelled = false;
    client.status().then(
      (s) => !cancelled && setStatus(s),
      () => !cancelled && setStatus({ enabled: false }),
    );
    return () => {
      cancelled = true;
    };
  }, [client]);

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
  if (!state.connection || !state.tools || !status) return <LoadingState label="Connecting to the MCP server" />;
  const current = mode ?? (status.enabled ? 'chat' : 'tools');
  return (
    <Card>
      <CardHeader>
        <Flex justify="between" align="center">
          <Text as="h3" variant="title-small">
            Assistant · {state.tools.length} tools
          </Text>
          {status.enabled ? (
            <Switch
              label={`Chat${status.model ? ` (${status.model})` : ''}`}
              isSelected={current === 'chat'}
              onChange={(c) => setMode(c ? 'chat' : 'tools')}
            />
          ) : (
            <Text variant="body-small" color="secondary">
              Configure promotions.assistant.llm on the backend to chat in natural language.
            </Text>
          )}
        </Flex>
      </CardHeader>
      <CardBody>
        {legacyEndpoint ? (
          <Alert
            status="warning"
            title="promotions.assistant.chatEndpoint is no longer used"
            description="The model is called by the promotions backend now, so its key never reaches the browser: move the endpoint to promotions.assistant.llm (baseUrl, model, apiKey) in the backend's app-config and remove chatEndpoint."
          />
        ) : null}
        {current === 'chat' && status.enabled ? (
          <ChatView client={client} />
        ) : (
          <ToolsView connection={state.connection} tools={state.tools} />
        )}
      </CardBody>
    </Card>
  );
}
