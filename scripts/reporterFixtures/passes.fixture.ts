import { expect, it } from 'vitest';

it('passes', () => expect(2).toBe(2));
