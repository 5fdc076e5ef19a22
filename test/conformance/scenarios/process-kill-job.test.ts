// The conformance scenario process-kill-job against the real ClusterD (test/conformance/suite.ts).
import { conformanceSuite } from '../suite.ts';

conformanceSuite('process-kill-job');
