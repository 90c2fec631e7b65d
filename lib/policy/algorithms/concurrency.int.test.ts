import { paritySuite } from "./parity-suite";

paritySuite("concurrency");
