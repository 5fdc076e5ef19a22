/**
 * The layering, checked by tools/layering/layering.test.ts (unit project, so the test command runs it).
 * Floors, bottom up: vocabulary/ (shared fault and signal vocabulary) -> schemas/ (wire formats) ->
 * policy/ (pure decisions: no I/O, no clock) -> runtime/ (client, informers, queue) -> state/ (what
 * the controller remembers between events: indexes over the informer caches, the intake's fault
 * store, last good inputs; in memory, no I/O, no clock) -> reconcilers/ and actions/ (the writers)
 * -> controllers/ (wiring) -> main.ts. Beside main.ts, the top floor cli/ (kubectl-clusterd, a
 * separate program talking to the apiserver only) may read vocabulary/, schemas/, policy/, runtime/
 * and state/ to decode formats; nothing imports it. Test files and test/ are not checked. There is
 * no exceptions list: any violation fails the test.
 */
const ABOVE_POLICY = '^(runtime|state|controllers|reconcilers|actions|grpc|telemetry|tools|test)/|^main\\.ts$';
const NPM = ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-bundled', 'npm-no-pkg', 'npm-unknown'];

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Import cycles (type-only imports count too) make the floors meaningless.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'vocabulary-is-ground',
      severity: 'error',
      comment: 'vocabulary/ is the ground floor: it imports nothing but itself, not even a library.',
      from: { path: '^vocabulary/' },
      to: { pathNot: '^vocabulary/' },
    },
    {
      name: 'schemas-not-above',
      severity: 'error',
      comment: 'schemas/ import only vocabulary/, other schemas and libraries.',
      from: { path: '^schemas/' },
      to: { path: `^policy/|${ABOVE_POLICY}` },
    },
    {
      name: 'policy-not-above',
      severity: 'error',
      comment: 'policy/ is pure: nothing from the runtime, the writers, the wiring, gRPC or telemetry.',
      from: { path: '^policy/' },
      to: { path: ABOVE_POLICY },
    },
    {
      name: 'policy-no-node-builtins',
      severity: 'error',
      comment: 'policy/ does no I/O and reads no clock: no node: built-in (fs, net, http, timers, ...).',
      from: { path: '^policy/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'policy-only-rxjs',
      severity: 'error',
      comment: 'policy/ may use rxjs (time through an injected scheduler); no other library (kube client, gRPC, winston, prom-client, undici, ...).',
      from: { path: '^policy/' },
      to: { dependencyTypes: NPM, pathNot: '(^|/)node_modules/rxjs/' },
    },
    {
      name: 'runtime-not-above',
      severity: 'error',
      comment: 'runtime/ (client, informers, queue, Kubernetes object types) is below the writers and the wiring.',
      from: { path: '^runtime/' },
      to: { path: '^(state|controllers|reconcilers|actions|policy|grpc)/|^main\\.ts$' },
    },
    {
      name: 'state-not-above',
      severity: 'error',
      comment: 'state/ (indexes over the informer caches, the intake\'s stores) reads vocabulary, schemas, policy and runtime; nothing from the writers, the wiring, gRPC or telemetry (it reports through ports such as state/bound-hits.ts).',
      from: { path: '^state/' },
      to: { path: '^(controllers|reconcilers|actions|grpc|telemetry|tools|test|cli)/|^main\\.ts$' },
    },
    {
      name: 'state-no-io',
      severity: 'error',
      comment: 'state/ is kept in memory: no node: built-in (fs, net, http, timers, ...) and no library (kube client, gRPC, winston, prom-client, ...).',
      from: { path: '^state/' },
      to: { dependencyTypes: ['core', ...NPM] },
    },
    {
      name: 'writers-not-wiring',
      severity: 'error',
      comment: 'Reconcilers and actions are called by the wiring, never the other way round: what they need (indexes, stores, types) lives in state/ or below.',
      from: { path: '^(reconcilers|actions)/' },
      to: { path: '^controllers/' },
    },
    {
      name: 'nothing-imports-cli',
      severity: 'error',
      comment: 'cli/ (kubectl-clusterd) is a separate program on top: the controller never imports it.',
      from: { pathNot: '^cli/' },
      to: { path: '^cli/' },
    },
    {
      name: 'cli-not-controller',
      severity: 'error',
      comment: 'cli/ talks to the apiserver with the user\'s RBAC; it decodes formats (vocabulary, schemas, policy) and uses the kube client, never the controller\'s wiring, writers, gRPC or telemetry.',
      from: { path: '^cli/' },
      to: { path: '^(controllers|reconcilers|actions|grpc|telemetry|tools)/|^main\\.ts$' },
    },
    {
      name: 'no-schema-compiler',
      severity: 'error',
      comment: 'The product compiles no JSON Schema at run time (ajv\'s compiler and the compiled schemas cost the idle controller ~12 MiB and ~0.4 s of start): it imports the validators ajv generates at build time (tools/gen-validators.ts, *.validators.gen.ts), which need only ajv\'s runtime helpers; types from ajv are fine.',
      from: { pathNot: '^tools/' },
      to: { path: '(^|/)node_modules/ajv/', pathNot: '(^|/)node_modules/ajv/dist/runtime/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'actions-not-reconcilers',
      severity: 'error',
      comment: 'Reconcilers call actions, not the other way round; what both need lives in actions/ or below.',
      from: { path: '^actions/' },
      to: { path: '^reconcilers/' },
    },
  ],
  options: {
    tsConfig: { fileName: 'tsconfig.json' },
    // A type-only import upward is still a dependency on the floor above.
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^dist/|^test/|\\.test\\.ts$' },
  },
};
