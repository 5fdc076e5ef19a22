// The conformance scenario scale-in-after-recover against the real ClusterD (test/conformance/suite.ts).
import { conformanceSuite } from '../suite.ts';

conformanceSuite('scale-in-after-recover');
