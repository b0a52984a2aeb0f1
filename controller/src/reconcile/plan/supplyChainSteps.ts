import {
  type Application,
  type Environment,
  PROMOTION_PREDICATE_TYPE,
  type SignaturePolicy,
  type SignatureState,
} from '@kpromo/api';
import pkg from '../../../package.json' with { type: 'json' };
import { CredentialsError } from '../../credentials/secrets.js';
import { registryEndpoint } from '../../extension/credentials.js';
import { PermanentAppError } from '../../extension/errors.js';
import { RegistryClient } from '../../oci/registryClient.js';
import { attestPromotion } from '../../supplychain/attestation.js';
import { checkSignatures } from '../../supplychain/check.js';
import { signingAnchor, signingKey, TrustAnchorError, type TrustedKey, trustedKeys } from '../../supplychain/keys.js';
import { signaturePolicyField, signaturePolicyFor, signaturesAllowCopy } from '../../supplychain/policy.js';
import { registryRepository } from '../../util/imageRef.js';
import type { AppStep, PlanRun } from './run.js';

/**
 * A key the flow may not use, or whose Secret is missing or wrong, fails the app (retrying cannot
 * help): the message names the flow field and what the flow writer or the platform admin must do.
 */
async function keyOrPermanent<T>(read: () => Promise<T>, field: string, flow: string): Promise<T> {
  try {
    return await read();
  } catch (e) {
    if (e instanceof TrustAnchorError) throw new PermanentAppError(e.reason, e.message);
    if (e instanceof CredentialsError)
      throw new PermanentAppError(e.reason, `${e.message} (PromotionFlow ${flow} ${field})`);
    throw e;
  }
}

/**
 * One source digest, in its source Environment's registry (with that Environment's credentials),
 * judged against a signature policy: what the check before the copy and the one shown while a plan
 * waits both run.
 */
async function judgeSource(
  run: Pick<PlanRun, 'deps' | 'now' | 'signal'>,
  from: Environment,
  app: Application,
  digest: string,
  policy: SignaturePolicy,
  keys: TrustedKey[],
): Promise<{ repo: string; state: SignatureState }> {
  const repo = registryRepository(from.spec.registry.prefix, app.spec.image.repository);
  const client = new RegistryClient(await registryEndpoint(run.deps.control, from, repo), undefined, run.deps.egress);
  return { repo, state: await checkSignatures(client, repo, digest, policy, keys, run.now(), run.signal) };
}

/**
 * Before any copy: the candidate's source digest against the target stage's signature policy. The
 * result is stored on the app (and so shown by every door); under Enforce an image that fails it
 * is not copied and the app fails with reason SignaturePolicy. Registry faults are retried.
 */
export async function verifySourceSignatures(c: AppStep): Promise<void> {
  const { run, r, app, ap } = c;
  // The signing key too is checked before the copy: a flow that may not sign copies nothing.
  const attest = r.flow.spec.promotionAttestation;
  const flowName = r.flow.metadata.name!;
  const flowRef = `${run.namespace}/${flowName}`;
  if (attest && !c.isRollback)
    await keyOrPermanent(
      async () => signingAnchor(run.deps.supplyChain, run.namespace, flowRef, attest),
      'promotionAttestation',
      flowName,
    );
  const policy = signaturePolicyFor(r.flow, run.plan.spec.to);
  if (!policy) return;
  const field = signaturePolicyField(r.flow, run.plan.spec.to);
  const keys = await keyOrPermanent(
    () => trustedKeys(run.deps.control, run.deps.supplyChain, run.namespace, flowRef, field, policy),
    `${field}.keys`,
    flowName,
  );
  const { repo, state } = await run.span('promote.signatures', { 'kpromo.app': ap.application }, () =>
    judgeSource(run, r.fromEnv, app, ap.digest!, policy, keys),
  );
  ap.signature = state;
  if (!signaturesAllowCopy(state))
    throw new PermanentAppError(
      'SignaturePolicy',
      `${r.fromEnv.spec.registry.host}/${repo}@${ap.digest} fails the signature policy for ${run.plan.spec.to} (PromotionFlow ${flowName}): ${state.verdict}: ${state.message}; nothing was copied`,
    );
}

/**
 * After the copy, before anything runs it: signs the promotion attestation for the target digest
 * and attaches it there (supplychain/attestation.ts). Once recorded in `ap.attestation` it is done;
 * a retry before that finds the one already attached.
 */
export async function attestPromotedImage(c: AppStep): Promise<void> {
  const { run, r, app, ap } = c;
  const ref = r.flow.spec.promotionAttestation;
  if (!ref || c.isRollback || ap.attestation) return;
  const key = await keyOrPermanent(
    () =>
      signingKey(
        run.deps.control,
        run.deps.supplyChain,
        run.namespace,
        `${run.namespace}/${r.flow.metadata.name}`,
        ref,
      ),
    'promotionAttestation.signingKey',
    r.flow.metadata.name!,
  );
  const fromRepo = registryRepository(r.fromEnv.spec.registry.prefix, app.spec.image.repository);
  const toRepo = registryRepository(r.toEnv.spec.registry.prefix, app.spec.image.repository);
  const client = new RegistryClient(
    await registryEndpoint(run.deps.control, r.toEnv, toRepo),
    undefined,
    run.deps.egress,
  );
  const cand = run.plan.spec.candidates.find((x) => x.application === ap.application);
  run.deps.fence?.(run.namespace);
  const manifestDigest = await run.span('promote.attest', { 'kpromo.app': ap.application }, () =>
    attestPromotion(
      client,
      {
        plan: { ...run.plan, status: run.status },
        app: ap,
        source: {
          host: r.fromEnv.spec.registry.host,
          repository: fromRepo,
          ...(cand?.from.tag ? { tag: cand.from.tag } : {}),
        },
        target: { host: r.toEnv.spec.registry.host, repository: toRepo },
        controllerVersion: pkg.version,
      },
      key,
      run.signal,
    ),
  );
  ap.attestation = { predicateType: PROMOTION_PREDICATE_TYPE, manifestDigest, signedBy: key.name };
  await run.journal.save();
  run.announce.event(
    'Normal',
    'PromotionAttested',
    `${ap.application}: promotion attestation ${manifestDigest} signed by ${key.name}`,
  );
}

/**
 * While a plan waits for approval: each candidate's source digest against the stage's signature
 * policy, stored in `status.candidateSignatures` so approvers see it before they approve (portal,
 * MCP `state`, `kpromo plan show`). Informative only: the check before the copy decides. A digest
 * already judged is not judged again (the plan's content never changes); a registry fault is
 * recorded as Error and retried on the next pass. Returns whether anything changed.
 */
export async function recordCandidateSignatures(run: PlanRun): Promise<boolean> {
  const { deps, plan, status, namespace } = run;
  const flow = deps.cache.getFlow(namespace, plan.spec.flow);
  const from = deps.cache.getEnvironment(namespace, plan.spec.from);
  const policy = flow && signaturePolicyFor(flow, plan.spec.to);
  if (!policy || !from || !plan.spec.candidates.length) return false;
  const known = new Map((status.candidateSignatures ?? []).map((s) => [s.application, s]));
  const todo = plan.spec.candidates.filter((c) => {
    const k = known.get(c.application);
    return !k || k.digest !== c.from.digest || k.verdict === 'Error';
  });
  if (!todo.length) return false;
  let keys: Awaited<ReturnType<typeof trustedKeys>> | undefined;
  let keyProblem: string | undefined;
  const field = signaturePolicyField(flow, plan.spec.to);
  try {
    keys = await trustedKeys(
      deps.control,
      deps.supplyChain,
      namespace,
      `${namespace}/${flow.metadata.name}`,
      field,
      policy,
    );
  } catch (e) {
    if (e instanceof TrustAnchorError) keyProblem = e.message;
    else if (e instanceof CredentialsError)
      keyProblem = `${e.message} (PromotionFlow ${flow.metadata.name} ${field}.keys)`;
    else throw e;
  }
  for (const cand of todo) {
    const app = deps.cache.getApplication(namespace, cand.application);
    if (!app) continue;
    let state: SignatureState;
    try {
      if (keyProblem) throw new Error(keyProblem);
      state = (await judgeSource(run, from, app, cand.from.digest, policy, keys!)).state;
    } catch (e) {
      state = {
        digest: cand.from.digest,
        verdict: 'Error',
        mode: policy.mode ?? 'Enforce',
        checks: [],
        message: `could not check: ${(e as Error).message}`.slice(0, 2048),
        checkedAt: run.now().toISOString(),
      };
    }
    known.set(cand.application, { application: cand.application, ...state });
  }
  status.candidateSignatures = plan.spec.candidates.flatMap((c) => {
    const s = known.get(c.application);
    return s ? [s] : [];
  });
  return true;
}
