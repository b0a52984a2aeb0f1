// The MCP Apps host of mcpCard.int.test.ts, in the browser: ext-apps' AppBridge drives the card in a
// sandboxed iframe (scripts only, no same-origin), as a chat client does. The host's MCP client is
// the real SDK client in the test process (as a desktop host keeps its MCP connections outside the
// web view): tool calls and chat messages from the card reach it through functions the test
// exposes on the page.
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';

interface HostWindow {
  /** The real client's tools/call, in the test process. */
  mcpCallTool(params: unknown): Promise<unknown>;
  /** A ui/message the card sent into the chat. */
  chatMessage(params: unknown): Promise<void>;
  openCard(card: { html: string; input: Record<string, unknown>; result: unknown }): Promise<void>;
}
const host = window as unknown as HostWindow;

let current: { bridge: AppBridge; iframe: HTMLIFrameElement } | undefined;

host.openCard = async ({ html, input, result }) => {
  if (current) {
    await current.bridge.teardownResource({}).catch(() => undefined);
    await current.bridge.close();
    current.iframe.remove();
  }
  const iframe = document.createElement('iframe');
  iframe.id = 'card';
  iframe.title = 'kpromo plan card';
  iframe.setAttribute('sandbox', 'allow-scripts');
  document.body.append(iframe);
  const bridge = new AppBridge(
    null,
    { name: 'kpromo-test-host', version: '1.0.0' },
    { serverTools: {}, message: { text: {} } },
  );
  bridge.oncalltool = (params) => host.mcpCallTool(params) as ReturnType<NonNullable<AppBridge['oncalltool']>>;
  bridge.onmessage = async (params) => {
    await host.chatMessage(params);
    return {};
  };
  const initialized = new Promise<void>((resolve) => {
    bridge.oninitialized = () => resolve();
  });
  const win = iframe.contentWindow!;
  await bridge.connect(new PostMessageTransport(win, win));
  iframe.srcdoc = html;
  await initialized;
  await bridge.sendToolInput({ arguments: input });
  await bridge.sendToolResult(result as Parameters<AppBridge['sendToolResult']>[0]);
  current = { bridge, iframe };
};
