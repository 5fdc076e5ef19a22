// The conformance scenario switch-nic-fail against the real ClusterD (test/conformance/suite.ts).
import { conformanceSuite } from '../suite.ts';

conformanceSuite('switch-nic-fail');
