import { SpanStatusCode } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initTracing, shutdownTracing, withSpan } from './tracing.js';

describe('withSpan', () => {
  const exporter = new InMemorySpanExporter();
  beforeAll(() => {
    expect(initTracing({ serviceName: 'test', spanProcessors: [new SimpleSpanProcessor(exporter)] })).toBe(true);
  });
  afterAll(() => shutdownTracing());

  it('nests child spans under the parent and returns the result', async () => {
    exporter.reset();
    const out = await withSpan('plan', { 'kpromo.plan': 'p1' }, async () => {
      await withSpan('app', { 'kpromo.app': 'a' }, async () => {
        await new Promise((r) => setTimeout(r, 5)); // crosses an async boundary
      });
      return 42;
    });
    expect(out).toBe(42);
    const spans = exporter.getFinishedSpans();
    const plan = spans.find((s) => s.name === 'plan')!;
    const app = spans.find((s) => s.name === 'app')!;
    expect(plan.attributes['kpromo.plan']).toBe('p1');
    expect(app.parentSpanContext?.spanId).toBe(plan.spanContext().spanId);
    expect(app.spanContext().traceId).toBe(plan.spanContext().traceId);
    expect(plan.status.code).toBe(SpanStatusCode.OK);
  });

  it('records the exception and sets error status, rethrowing', async () => {
    exporter.reset();
    await expect(
      withSpan('copy', {}, async () => {
        throw new Error('registry down');
      }),
    ).rejects.toThrow('registry down');
    const [span] = exporter.getFinishedSpans();
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'registry down' });
    expect(span.events.some((e) => e.name === 'exception')).toBe(true);
  });

  it('is off without an endpoint', () => {
    const saved = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    // Already on from beforeAll, but a fresh call without endpoint/processors must not force it on.
    expect(initTracing({ serviceName: 'x' })).toBe(false);
    if (saved) process.env.OTEL_EXPORTER_OTLP_ENDPOINT = saved;
  });
});
