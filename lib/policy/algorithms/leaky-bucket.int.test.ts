import { paritySuite } from "./parity-suite";

paritySuite("leaky_bucket");
