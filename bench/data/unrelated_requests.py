"""Requests that no lesson of the labelled set (`retrieval_evalset.py`) should answer.

The negatives of the relevance-floor calibration (`bench/bench_retrieval.py`):
an unrelated request must get no lesson and no skill. Two groups: everyday chat,
and programming topics far from every labelled lesson and template cluster
(front end, networking, systems languages, machine learning, mobile, devops,
theory). Written by hand for this purpose; none of them names a lesson's topic
(CSV, regular expressions, SQL, threads, sorting, shell scripts, rounding, dates).
"""

from __future__ import annotations

EVERYDAY: tuple[str, ...] = (
    "what's the capital of France",
    "write a haiku about rain",
    "tell me a joke about penguins",
    "how long should I boil an egg for a soft yolk",
    "recommend a good science fiction novel",
    "what is the weather usually like in Lisbon in April",
    "translate 'good morning' into Japanese",
    "how many moons does Jupiter have",
    "give me a recipe for banana bread",
    "who painted the Mona Lisa",
    "suggest a name for my new puppy",
    "what are some tips for falling asleep faster",
    "how do I get a red wine stain out of a carpet",
    "write a short birthday message for my grandmother",
    "explain the rules of cricket in simple terms",
    "what should I pack for a weekend hiking trip",
    "how tall is Mount Everest",
    "summarise the plot of Romeo and Juliet",
    "what's a good stretching routine after running",
    "how do vaccines train the immune system",
    "compose a limerick about a cat who loves cheese",
    "what is the difference between a crocodile and an alligator",
    "plan a three day itinerary for Rome",
    "how do I repot a houseplant without killing it",
    "why is the sky blue",
    "what are the symptoms of a cold versus the flu",
    "help me write a polite email declining a wedding invitation",
    "which planets could have liquid water",
    "how do I start learning to play the guitar",
    "what is the origin of Halloween",
    "give me ideas for a vegetarian dinner party",
    "how does photosynthesis work",
    "what are good questions to ask at the end of a job interview",
    "explain how a rainbow forms",
    "how can I improve my handwriting",
    "write a motivational quote for Monday morning",
    "what's the best way to learn Spanish vocabulary",
    "how do bees make honey",
    "who won the football world cup in 2014",
    "describe the taste of a mango to someone who never had one",
)
"""Everyday chat (40)."""

OTHER_PROGRAMMING: tuple[str, ...] = (
    "how do I center a div in CSS",
    "explain TCP slow start",
    "what is the difference between let and const in JavaScript",
    "how do React hooks like useEffect work",
    "explain the Rust borrow checker and lifetimes",
    "how do I make a responsive navigation bar with flexbox",
    "what does a Kubernetes ingress controller do",
    "explain how HTTPS certificates are validated by the browser",
    "how do I train a convolutional neural network on images",
    "what is gradient descent with momentum",
    "how do I build an iOS app with SwiftUI",
    "explain the Haskell monad type class",
    "how does DNS resolution find the IP of a domain",
    "what is the virtual DOM in front-end frameworks",
    "how do I write a Dockerfile for a Node.js web server",
    "explain the CAP theorem for distributed systems",
    "how does garbage collection work in the Java virtual machine",
    "how do I use CSS grid to build a photo gallery",
    "how do I animate an SVG icon on hover",
    "explain the difference between UDP and TCP",
    "how do I set up a load balancer in front of two web servers",
    "what is a transformer attention head in machine learning",
    "how do I publish an Android app to the Play Store",
    "what is the difference between a GPU and a TPU",
    "how do I configure webpack to bundle TypeScript",
    "how do I set up a VPN on my home router",
    "how do OAuth2 authorization codes work",
    "explain how a CPU pipeline and branch prediction work",
    "how do I draw a chart with D3.js",
    "what are WebSockets used for",
    "how do I write a smart contract in Solidity",
    "explain the difference between RAID 1 and RAID 5",
    "what is a Kalman filter",
    "how do I make a website accessible to screen readers",
    "explain how public key cryptography works",
    "how do I write a shader in GLSL for a glowing effect",
    "what is Terraform state and why does it matter",
    "how does the Linux kernel schedule memory pages to swap",
    "explain what a compiler's lexer and parser do",
    "how do I use Unity to make a 2D platformer",
)
"""Programming topics far from every labelled lesson (40)."""

UNRELATED_REQUESTS: tuple[str, ...] = EVERYDAY + OTHER_PROGRAMMING
"""All 80 unrelated requests."""
