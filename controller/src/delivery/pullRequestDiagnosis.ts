import { type BranchProtection, type Forge, ForgeError, requiresStatusContext } from '@kpromo/forge';
import type { DeliveryDiagnosis, DiagnoseContext } from '../extension/deliveryMethod.js';
import { KubeError } from '../kube/rest.js';
import { why } from '../util/errors.js';
import { forgeForEnvironment, repoRef } from './forges.js';

/** The status kpromo reports for the stage's approval policy (reconcile/plan/pullRequest.ts). */
const APPROVAL_STATUS = 'kpromo/approval';

/** The forge's own words for the settings the fixes name. */
const SETTINGS = {
  gitea: {
    where: (repo: string, branch: string) =>
      `in Gitea, ${repo} Settings → Branches → the protection rule matching ${branch}`,
    status: `turn on "Enable Status Check" and add ${APPROVAL_STATUS} to "Status check patterns" (API: enable_status_check, status_check_contexts)`,
    approvals: '"Required approvals" of at least 1 (API: required_approvals)',
  },
  github: {
    where: (repo: string, branch: string) =>
      `in GitHub, ${repo} Settings → Branches → the branch protection rule for ${branch} (or a ruleset's rules of the same names)`,
    status: `turn on "Require status checks to pass before merging" and add ${APPROVAL_STATUS} (API: required_status_checks.contexts)`,
    approvals:
      'turn on "Require a pull request before merging" with "Required approvals" of at least 1 (API: required_pull_request_reviews.required_approving_review_count)',
  },
} as const;

/**
 * For an Environment that promotes through pull requests (delivery.git.pullRequest): its token
 * Secret is usable as the controller uses it, the forge answers as that token, and the environment
 * branch's protection requires `kpromo/approval` and an approval. A stage whose approvalSource is
 * pullRequest relies on that protection (the forge's merge is its approval: kpromo only learns of an
 * unapproved merge afterwards), so there it is a failure; elsewhere a warning.
 */
export async function diagnosePullRequest(c: DiagnoseContext, branch: string): Promise<DeliveryDiagnosis[]> {
  const { env } = c;
  const pr = env.spec.delivery.git?.pullRequest;
  if (!pr) return [];
  const name = env.metadata.name;
  const subject = `Environment ${name} pull requests ${pr.forge} ${pr.repository}`;
  let forge: Forge;
  try {
    forge = await forgeForEnvironment(c.control, env);
  } catch (e) {
    if (e instanceof KubeError && (e.status === 401 || e.status === 403))
      return [
        {
          status: 'warn',
          subject,
          message: `you may not read its token Secret ${pr.tokenSecretRef.name} (${why(e)}): the forge was not checked`,
        },
      ];
    return [
      {
        status: 'fail',
        subject,
        message: why(e),
        fix: `the Secret named by delivery.git.pullRequest.tokenSecretRef of Environment ${name} holds the forge's API token in key "token", labelled promotions.kpromo.dev/credential=true, with ${pr.apiURL} in annotation promotions.kpromo.dev/destinations`,
      },
    ];
  }

  const out: DeliveryDiagnosis[] = [];
  let login: string;
  try {
    login = await forge.currentUser();
    out.push({ status: 'pass', subject, message: `${pr.apiURL} answers, the token acts as ${login}` });
  } catch (e) {
    return [
      {
        status: 'fail',
        subject,
        message: `${pr.apiURL} does not answer as the token of Secret ${pr.tokenSecretRef.name}: ${why(e)}`,
        fix:
          e instanceof ForgeError && e.status === 401
            ? `put a valid token of kpromo's forge user in key "token" of Secret ${pr.tokenSecretRef.name}`
            : e instanceof ForgeError && e.status === 403
              ? `give the token of Secret ${pr.tokenSecretRef.name} read access to its own user (Gitea: scope read:user): kpromo reads it to never count its own reviews and merges`
              : `check delivery.git.pullRequest.apiURL of Environment ${name} (${pr.forge === 'github' ? 'https://api.github.com, or https://HOST/api/v3' : "Gitea's own URL"}) and that it is reachable`,
      },
    ];
  }

  const relying = c.stages.filter((s) => s.stage.approvalSource === 'pullRequest');
  const strict = relying.length > 0;
  const reason = strict
    ? `${relying.map((s) => `flow ${s.flow}`).join(', ')} take${relying.length === 1 ? 's' : ''} the approvals of ${name} from the pull request (approvalSource pullRequest), so the forge's merge is the approval`
    : "a person who may push could merge a promotion before kpromo's approval (kpromo then only fails the plan with MergedWithoutApproval)";
  const s = SETTINGS[pr.forge];
  const where = s.where(pr.repository, branch);
  const protectionSubject = `Environment ${name} branch protection of ${branch}`;
  let p: BranchProtection | undefined;
  try {
    p = await forge.branchProtection(repoRef(pr.repository), branch);
  } catch (e) {
    out.push({
      status: 'warn',
      subject: protectionSubject,
      message: `could not be read as ${login}: ${why(e)}; ${reason}: it must require ${APPROVAL_STATUS}`,
      fix: `check it yourself: ${where}, ${s.status}; ${s.approvals}${pr.forge === 'github' ? ' (the token reads the branch protection rule only with the Administration: read permission, which kpromo needs for nothing else; rulesets any reader may read)' : ''}`,
    });
    return out;
  }
  if (!p) {
    out.push({
      status: strict ? 'fail' : 'warn',
      subject: protectionSubject,
      message: `branch ${branch} is not protected: ${reason}`,
      fix: `${where} (add one): ${s.status}; ${s.approvals}`,
    });
    return out;
  }
  const status = requiresStatusContext(p, APPROVAL_STATUS);
  // What the token could not read may require it: then only a warning, naming what was not read.
  const unread = p.unread ? ` as far as ${login} may read it (not ${p.unread})` : '';
  if (!status)
    out.push({
      status: strict && !p.unread ? 'fail' : 'warn',
      subject: protectionSubject,
      message: `does not require the status ${APPROVAL_STATUS}${unread}: ${reason}`,
      fix: `${where}: ${s.status}`,
    });
  if (p.requiredApprovals < 1)
    out.push({
      status: 'warn',
      subject: protectionSubject,
      message: `requires no approving review${unread}: the forge lets a pull request merge without one`,
      fix: `${where}: ${s.approvals}`,
    });
  if (status && p.requiredApprovals >= 1)
    out.push({
      status: 'pass',
      subject: protectionSubject,
      message: `requires ${APPROVAL_STATUS} and ${p.requiredApprovals} approval${p.requiredApprovals === 1 ? '' : 's'}${p.source ? ` (${p.source})` : ''}`,
    });
  return out;
}
