// @vitest-environment jsdom
import type { CandidateImages } from '@kpromo/plugin-promotions-react';
import { cleanup, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { CandidateDiff } from '../src/components/CandidateDiff';
import { fakeApi } from './fixtures';
import { renderWith } from './render';

afterEach(cleanup);

const D = (c: string) => `sha256:${c.repeat(64)}`;
const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const image = (digest: string, labels?: Record<string, string>, registry = 'ghcr.io') => ({
  environment: 'dev',
  registry,
  repository: 'org/checkout',
  digest,
  labelsState: 'read' as const,
  ...(labels ? { labels } : {}),
});

describe('the real diff of candidates', () => {
  it('shows short copyable digests, the image and source links, opening safely in a new tab', async () => {
    const images: CandidateImages[] = [
      {
        application: 'checkout',
        from: image(D('b'), { source: 'https://github.com/org/checkout', revision: B }),
        to: image(D('a'), { source: 'https://github.com/org/checkout', revision: A }),
      },
    ];
    renderWith(
      <CandidateDiff
        candidates={[
          { application: 'checkout', from: { tag: 'v2', digest: D('b') }, to: { tag: 'v1', digest: D('a') } },
        ]}
        images={images}
      />,
      { api: fakeApi() },
    );
    const item = await screen.findByTestId('candidate-checkout');
    expect(item.textContent).toContain('checkout: v1 → v2');
    expect(
      within(item)
        .getAllByTestId('digest')
        .map((d) => d.textContent),
    ).toEqual(['sha256:aaaaaaaaaaaa', 'sha256:bbbbbbbbbbbb']);
    expect(within(item).getAllByRole('button', { name: /^Copy digest/ })).toHaveLength(2);
    const links = within(item).getAllByRole('link');
    expect(links.map((l) => l.getAttribute('href'))).toEqual([
      'https://ghcr.io/org/checkout',
      `https://github.com/org/checkout/commit/${B}`,
      `https://github.com/org/checkout/compare/${A}...${B}`,
    ]);
    for (const l of links) {
      expect(l.getAttribute('rel')).toBe('noopener noreferrer');
      expect(l.getAttribute('target')).toBe('_blank');
    }
  });

  it('links nothing an attacker wrote that is no http(s) forge URL, and says when labels are missing or pending', async () => {
    const images: CandidateImages[] = [
      {
        application: 'evil',
        from: image(
          D('c'),
          { source: 'javascript:alert(1)', revision: B, url: 'javascript:alert(2)' },
          'registry.internal',
        ),
      },
      { application: 'slow', from: { ...image(D('d')), labelsState: 'pending' } },
      { application: 'bare', from: image(D('e')) },
    ];
    renderWith(
      <CandidateDiff
        candidates={['evil', 'slow', 'bare'].map((application, i) => ({
          application,
          from: { tag: 'v2', digest: D('cde'[i]) },
        }))}
        images={images}
      />,
      { api: fakeApi() },
    );
    const evil = await screen.findByTestId('candidate-evil');
    expect(within(evil).queryAllByRole('link')).toEqual([]);
    expect(evil.textContent).toContain('registry.internal/org/checkout');
    expect(evil.textContent).toContain('no source labels on the image');
    expect(screen.getByTestId('candidate-slow').textContent).toContain('reading the image labels');
    expect(screen.getByTestId('candidate-bare').textContent).toContain('no source labels on the image');
    expect(document.body.innerHTML).not.toContain('javascript:');
  });
});
