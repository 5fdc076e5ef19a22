/** `kubectl clusterd explain ns/job`: the job's decision history (DecisionRecords), newest first, with reason chains. */
import type { KubeClient } from '../runtime/kube-client.ts';
import { DECISION_JOB_LABEL, decisionRecordsPath, isLabelValue, parseDecisionRecord, type StoredDecisionRecord } from '../schemas/decision-record/decision-record.ts';
import { CliError, EXIT } from './errors.ts';
import { decisionRule } from '../vocabulary/rule-ids.ts';

export function parseJobRef(ref: string): { namespace: string; name: string } {
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([^/\s]+)$/.exec(ref);
  if (m === null) throw new CliError(`job must be <namespace>/<name>, got ${JSON.stringify(ref)}`, EXIT.usage);
  return { namespace: m[1]!, name: m[3]! };
}

/** The job's records, newest first. `name` matches the job's name or its PodGroup's. */
export async function jobHistory(client: KubeClient, namespace: string, name: string): Promise<StoredDecisionRecord[]> {
  const byLabel = isLabelValue(name) ? { labelSelector: `${DECISION_JOB_LABEL}=${name}` } : {};
  const list = await client.list<unknown>(decisionRecordsPath(namespace), byLabel);
  let items = list.items;
  if (items.length === 0 && isLabelValue(name)) {
    // A PodGroup name, or a job name the label could not carry: look at every record of the namespace.
    items = (await client.list<unknown>(decisionRecordsPath(namespace))).items;
  }
  return items.flatMap((i) => { const p = parseDecisionRecord(i); return p.ok ? [p.value] : []; })
    .filter((r) => r.spec.job.name === name || r.spec.job.podGroup === name)
    .sort((a, b) => b.atMs - a.atMs || (a.name < b.name ? 1 : -1));
}

export function explainText(job: string, records: readonly StoredDecisionRecord[]): string {
  const out: string[] = [`Decision history of ${job} (${records.length} record${records.length === 1 ? '' : 's'}, newest first)`, ''];
  for (const r of records) {
    const s = r.spec;
    out.push(`${s.decidedAt}  ${s.kind}/${s.phase}${s.row === undefined ? '' : ` (${s.rule ?? decisionRule(s.row) ?? `row ${s.row}`})`}  outcome=${s.outcome}  [${r.name}]`);
    for (const f of s.faults) out.push(`  fault   ${f.code}${f.level === undefined ? '' : ` ${f.level}`} on ${f.node ?? '?'}${f.device === undefined ? '' : `/${f.device}`}${f.faultType === undefined ? '' : ` (${f.faultType})`}${f.note === undefined ? '' : `: ${f.note}`}`);
    s.reasons.forEach((x, i) => out.push(`  ${i === 0 ? 'because' : '   then'} [${x.stage}] ${x.detail}`));
    if (s.actions.length > 0) out.push(`  actions ${s.actions.join(', ')}`);
    if (s.truncated === true) out.push('  (record truncated to its bounds)');
    out.push(`  id      ${s.decisionId}`, '');
  }
  return out.join('\n');
}
