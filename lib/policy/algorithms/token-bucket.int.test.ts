import { paritySuite } from "./parity-suite";

paritySuite("token_bucket");
