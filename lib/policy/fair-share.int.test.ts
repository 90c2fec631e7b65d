import { paritySuite } from "./algorithms/parity-suite";

paritySuite("fair_share");
