// The conformance scenario dump-after-recover against the real ClusterD (test/conformance/suite.ts).
import { conformanceSuite } from '../suite.ts';

conformanceSuite('dump-after-recover');
