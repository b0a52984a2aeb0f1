import { describe, expect, it } from 'vitest';
import { analysisVerdict } from '../../src/verification/providers/analysis.js';
import { numberFromQueryResponse } from '../../src/verification/providers/prometheus.js';

// Response bodies as the Prometheus HTTP API documentation shows them
// (https://prometheus.io/docs/prometheus/latest/querying/api/#instant-queries, #expression-query-result-formats).
describe('numberFromQueryResponse', () => {
  it('reads a one-sample vector and a scalar', () => {
    expect(
      numberFromQueryResponse({
        status: 'success',
        data: {
          resultType: 'vector',
          result: [
            { metric: { __name__: 'up', job: 'prometheus', instance: 'localhost:9090' }, value: [1435781451.781, '1'] },
          ],
        },
      }),
    ).toEqual({ value: 1 });
    expect(
      numberFromQueryResponse({ status: 'success', data: { resultType: 'scalar', result: [1435781451.781, '0.25'] } }),
    ).toEqual({
      value: 0.25,
    });
  });

  it('says why there is no number', () => {
    const docsTwoSeries = {
      status: 'success',
      data: {
        resultType: 'vector',
        result: [
          { metric: { __name__: 'up', job: 'prometheus', instance: 'localhost:9090' }, value: [1435781451.781, '1'] },
          { metric: { __name__: 'up', job: 'node', instance: 'localhost:9100' }, value: [1435781451.781, '0'] },
        ],
      },
    };
    expect(numberFromQueryResponse(docsTwoSeries).message).toBe(
      'the query returned 2 series; aggregate it to one (e.g. sum(...))',
    );
    expect(numberFromQueryResponse({ status: 'success', data: { resultType: 'vector', result: [] } }).message).toMatch(
      /no series/,
    );
    expect(numberFromQueryResponse({ status: 'error', errorType: 'bad_data', error: 'parse error at char 4' })).toEqual(
      {
        message: 'query failed: bad_data: parse error at char 4',
      },
    );
    expect(numberFromQueryResponse({ status: 'success', data: { resultType: 'matrix', result: [] } }).message).toMatch(
      /matrix/,
    );
    expect(
      numberFromQueryResponse({ status: 'success', data: { resultType: 'scalar', result: [1, 'NaN'] } }).message,
    ).toBe('the query returned NaN');
  });
});

describe('analysisVerdict', () => {
  const run = (name: string, phase: string, hash = 'abc', owner = 'web') => ({
    metadata: {
      name,
      labels: { 'rollouts-pod-template-hash': hash },
      ownerReferences: [{ kind: 'Rollout', name: owner }],
    },
    status: { phase, message: phase === 'Failed' ? 'metric "error-rate" assessed Failed' : undefined },
  });

  it("judges only the Rollout's current revision", () => {
    expect(analysisVerdict([run('a', 'Failed', 'old'), run('b', 'Successful')], 'web', 'abc')).toEqual({
      ok: true,
      final: true,
      message: '1 AnalysisRun(s) Successful',
    });
    expect(analysisVerdict([run('a', 'Successful', 'abc', 'other')], 'web', 'abc')).toMatchObject({ final: false });
  });

  it('fails on Failed or Error and waits while one runs', () => {
    expect(analysisVerdict([run('a', 'Successful'), run('b', 'Failed')], 'web', 'abc')).toEqual({
      ok: false,
      final: true,
      message: 'AnalysisRun b Failed: metric "error-rate" assessed Failed',
    });
    expect(analysisVerdict([run('a', 'Error')], 'web', 'abc').ok).toBe(false);
    expect(analysisVerdict([run('a', 'Running')], 'web', 'abc')).toEqual({
      final: false,
      message: 'AnalysisRun a Running',
    });
  });
});
