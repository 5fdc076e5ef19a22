// The conformance scenario hot-switch-stop against the real ClusterD (test/conformance/suite.ts).
import { conformanceSuite } from '../suite.ts';

conformanceSuite('hot-switch-stop');
