import { useApi } from '@backstage/frontend-plugin-api';
import { useCallback, useEffect, useRef, useState } from 'react';
import { useSearchParams } from 'react-router-dom';
import { type PromotionsApi, promotionsApiRef } from './api';

export interface AsyncState<T> {
  loading: boolean;
  error?: Error;
  value?: T;
  /** Load again (keeps the current value while loading). */
  retry: () => void;
}

export interface PollOptions<T> {
  /** Reload in the background every `pollMs` while the data is not final. */
  pollMs?: number;
  /** Whether the data is final (a finished plan): then poll every `slowPollMs`, or stop without it. */
  stop?: (value: T) => boolean;
  /** Polling once `stop` says the data is final; something else may still change it (a rollback). */
  slowPollMs?: number;
  /** Reload when the window gets the focus back or the tab becomes visible (default: when polling). */
  refreshOnFocus?: boolean;
}

/**
 * Loads data from the promotions API. With `pollMs`, reloads in the background (slower, or not at
 * all, once `stop(value)` says the data is final), at once when the window regains focus, and not
 * while the tab is hidden. When `deps` change, the previous data is dropped at once: a page never
 * shows one plan's data under another plan's URL.
 */
export function usePromotionsData<T>(
  load: (api: PromotionsApi) => Promise<T>,
  deps: unknown[],
  opts: PollOptions<T> = {},
): AsyncState<T> {
  const api = useApi(promotionsApiRef);
  const key = JSON.stringify(deps);
  const [state, setState] = useState<{ key: string; loading: boolean; error?: Error; value?: T }>({
    key,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const stopRef = useRef(opts.stop);
  stopRef.current = opts.stop;
  const { pollMs, slowPollMs } = opts;
  const refreshOnFocus = opts.refreshOnFocus ?? !!pollMs;

  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` stands for the caller's deps; tick is retry
  useEffect(() => {
    let cancelled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let seq = 0;
    let hiddenSkipped = false;
    const schedule = (ms: number | undefined) => {
      if (timer) clearTimeout(timer);
      timer = ms ? setTimeout(() => void run(true), ms) : undefined;
    };
    const run = async (background: boolean) => {
      if (timer) clearTimeout(timer);
      timer = undefined;
      if (background && typeof document !== 'undefined' && document.hidden) {
        hiddenSkipped = true; // the visibilitychange handler loads again
        return;
      }
      const mine = ++seq;
      setState((s) => (s.key === key ? { ...s, loading: true } : { key, loading: true }));
      try {
        const value = await loadRef.current(api);
        if (cancelled || mine !== seq) return;
        setState({ key, loading: false, value });
        if (pollMs) schedule(stopRef.current?.(value) ? slowPollMs : pollMs);
      } catch (e) {
        if (cancelled || mine !== seq) return;
        const error = e instanceof Error ? e : new Error(String(e));
        setState((s) => ({ key, loading: false, value: s.key === key ? s.value : undefined, error }));
        if (pollMs) schedule(Math.max(pollMs * 2, slowPollMs ?? 0));
      }
    };
    const onFocus = () => {
      if (typeof document !== 'undefined' && document.hidden) return;
      if (hiddenSkipped || refreshOnFocus) {
        hiddenSkipped = false;
        void run(false);
      }
    };
    void run(false);
    if (typeof window !== 'undefined' && (refreshOnFocus || pollMs)) {
      window.addEventListener('focus', onFocus);
      document.addEventListener('visibilitychange', onFocus);
    }
    return () => {
      cancelled = true;
      if (timer) clearTimeout(timer);
      if (typeof window !== 'undefined') {
        window.removeEventListener('focus', onFocus);
        document.removeEventListener('visibilitychange', onFocus);
      }
    };
  }, [api, tick, key, pollMs, slowPollMs, refreshOnFocus]);

  const retry = useCallback(() => setTick((t) => t + 1), []);
  const current = state.key === key ? state : { loading: true };
  return { ...current, retry };
}

/** `value` once it has stopped changing for `ms` (a filter field asks the server when typing pauses). */
export function useDebounced<T>(value: T, ms = 300): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}

/**
 * The page's filter in the URL (so a filtered view can be shared): the query parameters, and a
 * setter that changes some of them in place (an empty or undefined value removes the parameter).
 */
export function useUrlParams(): [URLSearchParams, (changes: Record<string, string | undefined>) => void] {
  const [params, setParams] = useSearchParams();
  const set = useCallback(
    (changes: Record<string, string | undefined>) =>
      setParams(
        (prev) => {
          const n = new URLSearchParams(prev);
          for (const [k, v] of Object.entries(changes)) {
            if (v) n.set(k, v);
            else n.delete(k);
          }
          return n;
        },
        { replace: true },
      ),
    [setParams],
  );
  return [params, set];
}

/**
 * Paging through a list the server pages with `continue` tokens: the tokens of the pages up to the
 * current one (the first page has none), kept for the filter (`key`) they were got with, so a new
 * filter starts at the first page without first asking for the old position under it.
 */
export function useContinuePages(key: string) {
  const [paging, setPaging] = useState<{ key: string; starts: Array<string | undefined> }>({
    key,
    starts: [undefined],
  });
  const starts = paging.key === key ? paging.starts : [undefined];
  return {
    /** The token of the page shown (undefined: the first). */
    start: starts[starts.length - 1],
    /** Index of the page shown, from 0. */
    index: starts.length - 1,
    next: (token: string | undefined) => setPaging({ key, starts: [...starts, token] }),
    previous: () => setPaging({ key, starts: starts.slice(0, -1) }),
  };
}
