import { paritySuite } from "../../store/testing/parity-suite";

paritySuite("quota");
