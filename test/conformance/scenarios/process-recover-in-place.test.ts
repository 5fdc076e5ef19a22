// The conformance scenario process-recover-in-place against the real ClusterD (test/conformance/suite.ts).
import { conformanceSuite } from '../suite.ts';

conformanceSuite('process-recover-in-place');
