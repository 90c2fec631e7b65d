import { paritySuite } from "../store/testing/parity-suite";

paritySuite("fair_share");
