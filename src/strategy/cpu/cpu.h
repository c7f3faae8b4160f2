/* The cpu strategy: the reference SpMM on host buffers (accumulated in
 * double, like the oracle), for machines without a GPU and as the answer
 * of last resort. Never chosen by AUTO, which plans for a device. */
#ifndef SPF_STRATEGY_CPU_CPU_H
#define SPF_STRATEGY_CPU_CPU_H

#include "strategy/strategy.h"

extern const strategy strategy_cpu;

#endif
