// The conformance scenario fault-service against the real ClusterD (test/conformance/suite.ts).
import { conformanceSuite } from '../suite.ts';

conformanceSuite('fault-service');
