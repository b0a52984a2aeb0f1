/**
 * Assistant evaluation: `yarn bench --only assistant` runs the tasks of bench/assistant/tasks.ts
 * through the portal assistant's chat loop and prints tool-choice accuracy, argument accuracy,
 * refusals held and seconds per task.
 *
 *   yarn bench --only assistant                                  # the CI model (llama.cpp, Gemma 3 270M)
 *   BENCH_ARGS_ASSISTANT="--ci" yarn bench --only assistant      # the CI subset only
 *   BENCH_ARGS_ASSISTANT="--base-url https://api.openai.com/v1 --model gpt-4.1-mini" \
 *     ASSISTANT_EVAL_API_KEY=… yarn bench --only assistant       # any OpenAI-compatible endpoint
 *   … --tasks version-cart-prod,line-stop   --json out.json      # some tasks; the results as JSON
 *   BENCH_ARGS_ASSISTANT="--record" yarn bench --only assistant  # the whole set, then the CI subset alone,
 *                                                                # with the CI model: bench/assistant/baseline.json
 *
 * Without --base-url it starts llama.cpp's server with the CI model (test/llm/llamaServer.ts; it is as
 * heavy as a cluster on a shared machine). The model runs the chat; no tool that changes something
 * is ever run (the assistant stops for the user's confirmation, which the evaluation never gives).
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startLlamaServer } from '@kpromo/test-harness';
import type { LlmConfig } from '../plugins/promotions-backend-module-assistant/src/assistant/config.js';
import { writeBaseline } from './assistant/baseline.js';
import { CI_MODEL, ciModelConfig, endpointConfig } from './assistant/llm.js';
import { figures, line } from './assistant/report.js';
import { runEvaluation, type TaskResult } from './assistant/run.js';
import { TASKS } from './assistant/tasks.js';

const { values } = parseArgs({
  options: {
    ci: { type: 'boolean', default: false },
    tasks: { type: 'string' },
    'base-url': { type: 'string' },
    model: { type: 'string', default: 'gpt-4.1-mini' },
    json: { type: 'string' },
    record: { type: 'boolean', default: false },
  },
});

async function main(): Promise<void> {
  const only = values.tasks?.split(',').map((s) => s.trim());
  const unknown = only?.filter((id) => !TASKS.some((t) => t.id === id)) ?? [];
  if (unknown.length) throw new Error(`unknown task(s): ${unknown.join(', ')}; see bench/assistant/tasks.ts`);
  if (values.record && (only || values.ci || values['base-url']))
    throw new Error('--record records the whole set with the CI model: without --tasks, --ci or --base-url');
  const tasks = TASKS.filter((t) => (only ? only.includes(t.id) : !values.ci || t.ci));
  console.log(`${tasks.length} task(s); * = a change parked for the user's confirmation`);
  const print = (r: TaskResult) => console.log(line(r));
  const baseUrl = values['base-url'];
  const results = baseUrl
    ? await runEvaluation({
        llm: endpointConfig({ baseUrl, model: values.model!, apiKey: process.env.ASSISTANT_EVAL_API_KEY }),
        tasks,
        onResult: print,
      })
    : await withCiModel((llm) => runEvaluation({ llm, tasks, onResult: print }));
  console.log('');
  for (const l of figures(`all ${results.length}`, results)) console.log(l);
  const ci = results.filter((r) => r.task.ci);
  if (ci.length && ci.length < results.length) for (const l of figures('ci tasks in this run', ci)) console.log(l);
  if (values.record) {
    // The CI subset again, alone on a fresh server as the CI test runs it: llama.cpp reuses the
    // cached prompt prefix, and what ran before can tip a greedy choice, so in-run figures may differ.
    console.log('\nthe CI subset alone, as bench/assistant/ci.int.test.ts runs it:');
    const alone = await withCiModel((llm) => runEvaluation({ llm, tasks: TASKS.filter((t) => t.ci), onResult: print }));
    for (const l of figures('ci subset', alone)) console.log(l);
    writeBaseline(CI_MODEL, results, alone);
    console.log('recorded in bench/assistant/baseline.json');
  }
  if (values.json)
    writeFileSync(
      values.json,
      JSON.stringify(
        results.map((r) => ({ ...r, task: r.task.id })),
        null,
        1,
      ),
    );
}

/** Runs `f` with the CI model on a fresh llama.cpp server. */
async function withCiModel<T>(f: (llm: LlmConfig) => Promise<T>): Promise<T> {
  const llama = await startLlamaServer({ log: (s) => console.error(`[llm] ${s}`) });
  console.log(`the CI model at ${llama.baseUrl}`);
  try {
    return await f(ciModelConfig(llama));
  } finally {
    await llama.stop();
  }
}

// Wrapped in main(): the root package is CommonJS, where top-level await is unavailable.
main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
