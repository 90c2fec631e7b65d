import { paritySuite } from "../../store/testing/parity-suite";

paritySuite("fixed_window");
