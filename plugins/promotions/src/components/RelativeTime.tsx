import { formatRelative, formatTime } from '@kpromo/plugin-promotions-react';
import { useState } from 'react';

/**
 * "3 h ago", with the absolute time in a tooltip for the pointer, shown next to it once focused for
 * keyboard users, and always read out by screen readers.
 */
export function RelativeTime({ iso, now }: { iso: string | undefined; now: number }) {
  const [revealed, setRevealed] = useState(false);
  if (!iso) return <>—</>;
  const absolute = formatTime(iso);
  return (
    <time
      dateTime={iso}
      title={absolute}
      // biome-ignore lint/a11y/noNoninteractiveTabindex: focus is how keyboard users reveal the absolute time
      tabIndex={0}
      // Once revealed it stays: a table's focus management may move focus on to the cell right away.
      onFocus={() => setRevealed(true)}
      data-testid="relative-time"
    >
      <span>{formatRelative(iso, now)}</span>
      {revealed ? (
        <span data-testid="absolute-time"> ({absolute})</span>
      ) : (
        <span
          style={{
            position: 'absolute',
            width: 1,
            height: 1,
            overflow: 'hidden',
            clip: 'rect(0 0 0 0)',
            whiteSpace: 'nowrap',
          }}
        >
          {` (${absolute})`}
        </span>
      )}
    </time>
  );
}
