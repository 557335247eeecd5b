// hwapprox/softmax_common.h -- what every softmax unit of softmax.h shares: the
// row-mask policies and the io_parallel entry points.
//
// Mask contract (hwapprox.approx.softmax.SoftmaxSpec, every method): one bit per
// element, true = masked out. A masked element takes no part in the (running) max
// or the sum and outputs 0; the others get exactly the codes of the row without it;
// a fully masked row outputs zeros. no_mask is the policy of the unmasked overload:
// every bit false at compile time, so the mask logic folds away and the unit is
// bit-identical to the model without a mask.
//
// softmax_row_entry<OP> (CRTP) gives a unit OP with a
// row<data_T, res_T, C>(data, mask policy, res) its two io_parallel entry points,
// OP::run<data_T, res_T, C>(data, res) and OP::run(data, mask, res).
#ifndef HWAPPROX_SOFTMAX_COMMON_H
#define HWAPPROX_SOFTMAX_COMMON_H


namespace hwapprox {

// Row masks: no_mask (every element takes part) or mask_bits over a bool
// array, true = masked out.
struct no_mask {
    bool operator[](int) const { return false; }
};
struct mask_bits {
    const bool* bits;
    bool operator[](int i) const { return bits[i]; }
};

// The two io_parallel entry points of a unit (CRTP): OP::row<data_T, res_T, C>(data,
// mask policy, res) with no_mask, or with the caller's mask bits.
template <class OP>
struct softmax_row_entry {
    template <class data_T, class res_T, typename C>
    static void run(const data_T data[C::n_in], res_T res[C::n_in]) {
        #pragma HLS INLINE
        OP::template row<data_T, res_T, C>(data, no_mask(), res);
    }
    template <class data_T, class res_T, typename C>
    static void run(const data_T data[C::n_in], const bool mask[C::n_in], res_T res[C::n_in]) {
        #pragma HLS INLINE
        const mask_bits m = {mask};
        OP::template row<data_T, res_T, C>(data, m, res);
    }
};

}  // namespace hwapprox

#endif  // HWAPPROX_SOFTMAX_COMMON_H
