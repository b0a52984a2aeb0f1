import { useApi } from '@backstage/frontend-plugin-api';
import { useCallback, useEffect, useRef, useState } from 'react';
import { type PromotionsApi, promotionsApiRef } from './api';

export interface AsyncState<T> {
  loading: boolean;
  error?: Error;
  value?: T;
  /** Load again (keeps the current value while loading). */
  retry: () => void;
}

/**
 * Loads data from the promotions API. With `pollMs`, reloads in the background until `stop(value)`
 * says the data is final, so pages show live progress without a reload.
 */
export function usePromotionsData<T>(
  load: (api: PromotionsApi) => Promise<T>,
  deps: unknown[],
  opts: { pollMs?: number; stop?: (value: T) => boolean } = {},
): AsyncState<T> {
  const api = useApi(promotionsApiRef);
  const [state, setState] = useState<{ loading: boolean; error?: Error; value?: T }>({ loading: true });
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const stopRef = useRef(opts.stop);
  stopRef.current = opts.stop;

  // biome-ignore lint/correctness/useExhaustiveDependencies: deps are the caller's
  useEffect(() => {
    let cancelled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      setState((s) => ({ ...s, loading: true }));
      try {
        const value = await loadRef.current(api);
        if (cancelled) return;
        setState({ loading: false, value });
        if (opts.pollMs && !stopRef.current?.(value)) timer = setTimeout(run, opts.pollMs);
      } catch (e) {
        if (cancelled) return;
        setState((s) => ({ loading: false, value: s.value, error: e instanceof Error ? e : new Error(String(e)) }));
        if (opts.pollMs) timer = setTimeout(run, opts.pollMs * 2);
      }
    };
    run();
    return () => {
      cancelled = true;
      if (timer) clearTimeout(timer);
    };
  }, [api, tick, opts.pollMs, ...deps]);

  const retry = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, retry };
}
