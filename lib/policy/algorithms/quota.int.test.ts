import { paritySuite } from "./parity-suite";

paritySuite("quota");
