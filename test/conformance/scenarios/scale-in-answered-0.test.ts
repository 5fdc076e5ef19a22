// The conformance scenario scale-in-answered-0 against the real ClusterD (test/conformance/suite.ts).
import { conformanceSuite } from '../suite.ts';

conformanceSuite('scale-in-answered-0');
