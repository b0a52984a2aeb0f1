import { type Attributes, type Span, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

const TRACER = 'kpromo-controller';
let provider: NodeTracerProvider | undefined;

export interface TracingOptions {
  serviceName: string;
  /** OTLP/HTTP base URL (e.g. http://collector:4318); falls back to OTEL_EXPORTER_OTLP_ENDPOINT. */
  otlpEndpoint?: string;
  /** For tests: use these processors instead of the OTLP exporter (tracing is then always on). */
  spanProcessors?: SpanProcessor[];
}

/** Off by default: without an endpoint the global no-op tracer stays in place and spans cost nothing. */
export function initTracing(opts: TracingOptions): boolean {
  const endpoint = opts.otlpEndpoint ?? process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!opts.spanProcessors && !endpoint) return false;
  if (provider) return true;
  // The exporter wants the full traces URL when given explicitly; the env var form is a base URL.
  const traces = `${endpoint?.replace(/\/+$/, '')}/v1/traces`;
  const processors = opts.spanProcessors ?? [new BatchSpanProcessor(new OTLPTraceExporter({ url: traces }))];
  provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: opts.serviceName }),
    spanProcessors: processors,
  });
  // register() installs the AsyncLocalStorage context manager so child spans find their parent.
  provider.register();
  return true;
}

/** Flushes pending spans; call on graceful shutdown. */
export async function shutdownTracing(): Promise<void> {
  const p = provider;
  provider = undefined;
  if (!p) return;
  await p.shutdown();
  trace.disable();
}

/** Runs fn inside an active span (children nest under it), recording exceptions and the status. */
export function withSpan<T>(name: string, attrs: Attributes, fn: (span: Span) => Promise<T>): Promise<T> {
  return trace.getTracer(TRACER).startActiveSpan(name, { attributes: attrs }, async (span) => {
    try {
      const result = await fn(span);
      span.setStatus({ code: SpanStatusCode.OK });
      return result;
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      span.recordException(e);
      span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * Records a release event (plan approved, app succeeded, …) on the active span, so a trace shows
 * what happened where it happened; a no-op without tracing or outside a span.
 */
export function spanEvent(name: string, attrs: Attributes = {}): void {
  trace.getActiveSpan()?.addEvent(name, attrs);
}
