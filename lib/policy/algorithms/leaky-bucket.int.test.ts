import { paritySuite } from "../../store/testing/parity-suite";

paritySuite("leaky_bucket");
