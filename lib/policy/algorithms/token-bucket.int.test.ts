import { paritySuite } from "../../store/testing/parity-suite";

paritySuite("token_bucket");
