/**
 * Ids of the rules the controller follows, one per heading of docs/rules.md (`### <id>`). Reasons in
 * explain, Events, DecisionRecords and logs name a rule by its id so a reader can look it up there;
 * a unit test keeps this list and the document's headings equal. Ids are `area.short-name` and never
 * change meaning: a rule that changes gets a new id.
 */
export const RULE = {
  levels: {
    chipLevels: 'levels.chip-levels',
    mostSevere: 'levels.most-severe',
    cardHealth: 'levels.card-health',
    nodeSwitchLevels: 'levels.node-switch-levels',
    unknownCodes: 'levels.unknown-codes',
  },
  detect: {
    frequencyEscalation: 'detect.frequency-escalation',
    durationEscalation: 'detect.duration-escalation',
    linkDownHold: 'detect.link-down-hold',
    devicePluginManualSeparation: 'detect.device-plugin-manual-separation',
    gracefulTolerance: 'detect.graceful-tolerance',
  },
  ingest: {
    checksumGate: 'ingest.checksum-gate',
    splitPerCode: 'ingest.split-per-code',
    updateCadence: 'ingest.update-cadence',
    publicFaults: 'ingest.public-faults',
    preSeparate: 'ingest.pre-separate',
    clusterInfoReport: 'ingest.cluster-info-report',
    clusterInfoShards: 'ingest.cluster-info-shards',
    changeDetection: 'ingest.change-detection',
  },
  filter: {
    chainOrder: 'filter.chain-order',
    custom: 'filter.custom',
    mindieHold: 'filter.mindie-hold',
    uceAccompany: 'filter.uce-accompany',
    stepRetry: 'filter.step-retry',
    recoverInPlace: 'filter.recover-in-place',
    stressTest: 'filter.stress-test',
    twoViews: 'filter.two-views',
  },
  job: {
    deviceMap: 'job.device-map',
    faultRanks: 'job.fault-ranks',
    healthState: 'job.health-state',
    subscriberLevels: 'job.subscriber-levels',
    relationFaults: 'job.relation-faults',
    faultSubscription: 'job.fault-subscription',
    nodeNotReady: 'job.node-not-ready',
  },
  manual: {
    incrementFaults: 'manual.increment-faults',
    softwareVsHardware: 'manual.software-vs-hardware',
    threshold: 'manual.threshold',
    release: 'manual.release',
    policyConfig: 'manual.policy-config',
  },
  resched: {
    faultNodes: 'resched.fault-nodes',
    faultTasks: 'resched.fault-tasks',
    faultJobCache: 'resched.fault-job-cache',
    jobReason: 'resched.job-reason',
    jobGrace: 'resched.job-grace',
    jobForce: 'resched.job-force',
    restartSuccess: 'resched.restart-success',
    podLevel: 'resched.pod-level',
    podLevelCap: 'resched.pod-level-cap',
    pendingEscalation: 'resched.pending-escalation',
    blockEscalation: 'resched.block-escalation',
    masterRank: 'resched.master-rank',
    subHealth: 'resched.sub-health',
    external: 'resched.external',
    platformMode: 'resched.platform-mode',
    retryBudget: 'resched.retry-budget',
    placement: 'resched.placement',
    reasonHistory: 'resched.reason-history',
    podLevelResetConfig: 'resched.pod-level-reset-config',
    lifecycle: 'resched.lifecycle',
  },
  tor: {
    shareState: 'tor.share-state',
    rePlacement: 'tor.re-placement',
  },
  operator: {
    failedPodBudget: 'operator.failed-pod-budget',
    hotSwitchPods: 'operator.hot-switch-pods',
  },
  recover: {
    register: 'recover.register',
    signalStream: 'recover.signal-stream',
    hardwareEntry: 'recover.hardware-entry',
    softwareEntry: 'recover.software-entry',
    nodeExpansion: 'recover.node-expansion',
    strategyChoice: 'recover.strategy-choice',
    stepRetry: 'recover.step-retry',
    inPlace: 'recover.in-place',
    waitReschedule: 'recover.wait-reschedule',
    elasticTraining: 'recover.elastic-training',
    faultRetry: 'recover.fault-retry',
    killJob: 'recover.kill-job',
    dump: 'recover.dump',
    platformMode: 'recover.platform-mode',
    forceRelease: 'recover.force-release',
    forceReleaseA5: 'recover.force-release-a5',
    rackWait: 'recover.rack-wait',
    faultJobInfoClear: 'recover.fault-job-info-clear',
    stressTest: 'recover.stress-test',
    switchNic: 'recover.switch-nic',
    fsm: 'recover.fsm',
    resume: 'recover.resume',
    fsmClearFail: 'recover.fsm-clear-fail',
    resetConfigWrites: 'recover.reset-config-writes',
  },
  hotswitch: {
    entry: 'hotswitch.entry',
    failure: 'hotswitch.failure',
    fsm: 'hotswitch.fsm',
    stopJob: 'hotswitch.stop-job',
  },
  decision: {
    order: 'decision.order',
    noEffect: 'decision.no-effect',
    hiddenByFilter: 'decision.hidden-by-filter',
    reschedulingOff: 'decision.rescheduling-off',
    external: 'decision.external',
    masterRank: 'decision.master-rank',
    hotSwitch: 'decision.hot-switch',
    subHealth: 'decision.sub-health',
    processLevel: 'decision.process-level',
    processGivesUp: 'decision.process-gives-up',
    podLevel: 'decision.pod-level',
    jobLevel: 'decision.job-level',
    failedPodBudget: 'decision.failed-pod-budget',
  },
  pingmesh: {
    superPodDevices: 'pingmesh.super-pod-devices',
    config: 'pingmesh.config',
  },
  timing: {
    clusterd: 'timing.clusterd',
    volcano: 'timing.volcano',
    nodeAgents: 'timing.node-agents',
  },
} as const;

type Leaves<T> = T extends string ? T : { [K in keyof T]: Leaves<T[K]> }[keyof T];
/** Every rule id. */
export type RuleId = Leaves<typeof RULE>;

/** All ids, in document order. */
export const RULE_IDS: readonly RuleId[] = Object.values(RULE).flatMap((area) => Object.values(area) as RuleId[]);

/**
 * The rows of the rescheduling decision table (docs/rules.md, `decision.*`), evaluated top-down; the
 * number is the row's place in that table and in policy/jobs/job-decision.ts.
 */
export const DECISION_ROW_RULE = {
  1: RULE.decision.noEffect,
  2: RULE.decision.hiddenByFilter,
  3: RULE.decision.reschedulingOff,
  4: RULE.decision.external,
  5: RULE.decision.masterRank,
  6: RULE.decision.hotSwitch,
  7: RULE.decision.subHealth,
  8: RULE.decision.processLevel,
  9: RULE.decision.processGivesUp,
  10: RULE.decision.podLevel,
  11: RULE.decision.jobLevel,
  12: RULE.decision.failedPodBudget,
} as const;

/** The rule id of a decision-table row; undefined for a number that is no row. */
export function decisionRule(row: number): RuleId | undefined {
  return (DECISION_ROW_RULE as Record<number, RuleId | undefined>)[row];
}
