"""The hmm problem's entry: its option ranges are the decoders'."""


def test_hmm_orders_are_the_decoders():
    from cpsvm.decoding import viterbi
    from cpsvm.problems import hmm

    assert (hmm.MAX_TRANS_ORDER, hmm.MAX_EMIT_ORDER) == (
        viterbi.MAX_TRANS_ORDER,
        viterbi.MAX_EMIT_ORDER,
    )
