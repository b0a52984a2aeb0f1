import { describe, expect, it } from 'vitest';
import { sparkSegments, sparkText } from '../src/charts.js';

describe('plan card charts', () => {
  it('a text chart has one bar per value, lowest to highest, and a dot where there was no data', () => {
    expect(sparkText([0, 0.5, 1, null, 1])).toBe('▁▅█·█');
    expect(sparkText([2, 2])).toBe('▄▄');
    expect(sparkText([null])).toBe('·');
  });
  it('an SVG chart breaks its line where there was no data and scales the values to the box', () => {
    expect(sparkSegments([0, 1, null, 1], 30, 10)).toEqual(['0.0,10.0 10.0,0.0', '30.0,0.0']);
    expect(sparkSegments([null, null], 30, 10)).toEqual([]);
  });
});
