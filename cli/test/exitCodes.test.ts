import { ApiError, ConfigError, KubeError } from '@kpromo/controller/api';
import { CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { CliFailure, describeFailure, EXIT, EXIT_CODES_HELP, exitCodeForStatus, UsageError } from '../src/exitCodes.js';

describe('exit codes', () => {
  it('maps API statuses: 400 usage, 401/403 forbidden, 404 not found, 409 conflict, others failure', () => {
    expect([400, 401, 403, 404, 409, 500, 503].map(exitCodeForStatus)).toEqual([2, 3, 3, 4, 5, 1, 1]);
  });

  it('an ApiError keeps its message and gets the code of its status', () => {
    expect(describeFailure(new ApiError(403, 'forbidden: bob may not approve'))).toEqual({
      code: EXIT.FORBIDDEN,
      message: 'forbidden: bob may not approve',
    });
    expect(describeFailure(new ApiError(404, 'PromotionPlan a/b not found')).code).toBe(EXIT.NOT_FOUND);
    expect(describeFailure(new ApiError(409, 'already approved')).code).toBe(EXIT.CONFLICT);
    expect(describeFailure(new ApiError(400, 'invalid arguments: to: is required')).code).toBe(EXIT.USAGE);
  });

  it('an apiserver refusal (KubeError) maps by its status: an expired token is forbidden', () => {
    const e = new KubeError(401, 'Unauthorized', 'POST', '/apis/x', 'dev', 'Unauthorized');
    expect(describeFailure(e)).toMatchObject({ code: EXIT.FORBIDDEN, message: expect.stringContaining('401') });
  });

  it('usage and configuration problems exit 2 with just the problems', () => {
    expect(describeFailure(new UsageError('pass --namespace'))).toEqual({ code: 2, message: 'pass --namespace' });
    expect(describeFailure(new ConfigError(['context: no context "x"']))).toEqual({
      code: 2,
      message: 'context: no context "x"',
    });
  });

  it('commander: help exits 0, its usage errors 2, with its own message already printed', () => {
    expect(describeFailure(new CommanderError(0, 'commander.helpDisplayed', '(outputHelp)'))).toEqual({
      code: 0,
      message: '',
    });
    expect(describeFailure(new CommanderError(0, 'commander.help', '(outputHelp)'))).toEqual({ code: 0, message: '' });
    // No command given: commander shows the help as an error.
    expect(describeFailure(new CommanderError(1, 'commander.help', '(outputHelp)'))).toEqual({ code: 2, message: '' });
    expect(describeFailure(new CommanderError(1, 'commander.unknownCommand', "unknown command 'x'"))).toEqual({
      code: 2,
      message: '',
    });
  });

  it('a CliFailure keeps its own code', () => {
    expect(describeFailure(new CliFailure(EXIT.PLAN_FAILED, 'plan a/b finished Failed'))).toEqual({
      code: 6,
      message: 'plan a/b finished Failed',
    });
  });

  it('an unreachable apiserver is a failure that says what to check', () => {
    const e = new TypeError('fetch failed', {
      cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' }),
    });
    const f = describeFailure(e);
    expect(f.code).toBe(EXIT.FAILURE);
    expect(f.message).toMatch(/cannot reach the Kubernetes API: connect ECONNREFUSED .*--kubeconfig and --context/);
  });

  it('anything else is a failure with its message only', () => {
    expect(describeFailure(new Error('boom'))).toEqual({ code: 1, message: 'boom' });
  });

  it('the help text lists every code', () => {
    for (const code of Object.values(EXIT)) expect(EXIT_CODES_HELP).toMatch(new RegExp(`^  ${code}  \\S`, 'm'));
  });
});
