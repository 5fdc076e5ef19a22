// The conformance scenario a3-switch-cqe against the real ClusterD (test/conformance/suite.ts).
import { conformanceSuite } from '../suite.ts';

conformanceSuite('a3-switch-cqe');
